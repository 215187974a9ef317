import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import yargs from 'yargs'
import { builder } from '../../../bin/commands/serve'
import { checkServeConfig, mergeServeSettings, readServeConfig, type ServeValue } from '../../../bin/serve-config'
import { SERVE_OPTIONS, type ServeOptionSpec } from '../../../bin/serve-options'
import { nodeOptionsOf, serveArgs } from '../../../bin/serve-settings'
import type { NodeOptions } from '../../../server/node-options'
import { makeTestCertificates } from '../../../testkit/net/tls-certs'
import { makeTmp } from '../../../testkit/stores/tmp'

/**
 * `rostore serve --config`: every flag is a key of the file, flags win, relative paths
 * are anchored at the file, and a bad file is refused naming the file and the key.
 */
const tmp = makeTmp('rostore-serve-config-')
afterAll(() => tmp.cleanup())

function writeConfig(settings: unknown, name = 'node.json'): string {
  const dir = tmp.fresh()
  const file = join(dir, name)
  writeFileSync(file, typeof settings === 'string' ? settings : JSON.stringify(settings))
  return file
}

/** A value for each flag that differs from its default, as written in the file. */
function sample(o: ServeOptionSpec): ServeValue {
  switch (o.kind) {
    case 'integer':
      return o.name === 'workers' ? 3 : 4321
    case 'boolean':
      return o.default !== true
    case 'sources':
      return ['builds', 's3://bucket/builds']
    case 'path':
      return `rel/${o.name}`
    case 'string':
      return o.choices ? (o.choices.find((c) => c !== o.default) as string) : `${o.name}-value`
  }
}

test('the flags yargs knows are exactly the table the config file is checked against', () => {
  const keys = (builder(yargs([])) as unknown as { getOptions(): { key: Record<string, unknown> } }).getOptions().key
  const flags = Object.keys(keys).filter((k) => !['help', 'version', 'config', '$0'].includes(k))
  expect(flags.sort()).toEqual(SERVE_OPTIONS.map((o) => o.name).sort())
  // One declaration per flag.
  expect(new Set(SERVE_OPTIONS.map((o) => o.name)).size).toBe(SERVE_OPTIONS.length)
})

test('every flag can be set in the file; relative paths are resolved against the file', async () => {
  const settings = Object.fromEntries(SERVE_OPTIONS.map((o) => [o.name, sample(o)]))
  const file = writeConfig(settings)
  const dir = join(file, '..')
  const merged = mergeServeSettings({}, await readServeConfig(file))
  for (const o of SERVE_OPTIONS) {
    const expected =
      o.kind === 'path' ? join(dir, `rel/${o.name}`) : o.kind === 'sources' ? [join(dir, 'builds'), 's3://bucket/builds'] : sample(o)
    expect({ [o.name]: merged[o.name] }).toEqual({ [o.name]: expected })
    expect(merged[o.name]).not.toEqual(typeof o.default === 'function' ? o.default() : o.default)
  }
})

test('absolute paths and URLs in the file are kept as they are', () => {
  const s = checkServeConfig(
    { 'data-dir': '/var/lib/rostore', 'allowed-source': ['/srv/builds', 'https://h/b', 'file:///x'] },
    '/etc/x/n.json',
  )
  expect(s['data-dir']).toBe('/var/lib/rostore')
  expect(s['allowed-source']).toEqual(['/srv/builds', 'https://h/b', 'file:///x'])
})

test('flags on the command line win over the file; defaults fill the rest', () => {
  const file = checkServeConfig({ cluster: '/c.json', 'node-id': 1, 'data-dir': '/d', port: 9000, 'access-log': true }, '/etc/n.json')
  const m = mergeServeSettings({ port: 9100, 'access-log': false }, file)
  expect(m).toMatchObject({ port: 9100, 'access-log': false, 'node-id': 1, 'keep-versions': 2, 'self-repair': true, preload: 'index' })
})

test('a token given on the command line, as a value or a file, replaces the file token in either form', () => {
  const file = checkServeConfig(
    { cluster: '/c.json', 'node-id': 0, 'data-dir': '/d', 'read-token-file': '/etc/rostore/read-token', 'admin-token': 'file-admin-token' },
    '/etc/n.json',
  )
  const m = mergeServeSettings({ 'read-token': 'cli-read-token', 'admin-token-file': '/run/admin' }, file)
  expect(m['read-token']).toBe('cli-read-token')
  expect(m['read-token-file']).toBeUndefined()
  expect(m['admin-token-file']).toBe('/run/admin')
  expect(m['admin-token']).toBeUndefined()
})

test('every setting of the file reaches the node options', async () => {
  const certs = makeTestCertificates(join(tmp.dir, 'pki'))
  const dir = tmp.fresh()
  writeFileSync(join(dir, 'admin-token'), 'admin-token-from-file-0123\n')
  writeFileSync(join(dir, 'read-token'), 'read-token-from-file-0123\n')
  mkdirSync(join(dir, 'builds'))
  const file = join(dir, 'node.json')
  const settings: Record<string, unknown> = Object.fromEntries(SERVE_OPTIONS.map((o) => [o.name, sample(o)]))
  Object.assign(settings, { 'tls-cert': certs.certFile, 'tls-key': certs.keyFile, 'peer-ca-file': certs.caFile })
  writeFileSync(join(dir, 'metrics-token'), 'metrics-token-from-file-0123\n')
  Object.assign(settings, { 'admin-token-file': 'admin-token', 'read-token-file': 'read-token', 'metrics-token-file': 'metrics-token' })
  delete settings['admin-token']
  delete settings['read-token']
  delete settings['metrics-token']
  writeFileSync(file, JSON.stringify(settings))
  const opts = await nodeOptionsOf(await serveArgs({ config: file }))
  // How each flag shows in NodeOptions; a flag missing here fails the test below.
  const reach: Record<string, (o: Omit<NodeOptions, 'log'>) => unknown> = {
    cluster: (o) => o.clusterPath,
    'node-id': (o) => o.nodeId,
    'data-dir': (o) => o.dataDir,
    'admin-token': (o) => o.adminToken,
    'admin-token-file': (o) => o.adminToken,
    'keep-versions': (o) => o.keepVersions,
    bind: (o) => o.bind,
    port: (o) => o.port,
    'fetch-max-bytes-per-sec': (o) => o.fetchMaxBytesPerSec,
    'stream-max-bytes-per-sec': (o) => o.streamMaxBytesPerSec,
    'allowed-source': (o) => o.allowedSources,
    'fetch-stall-timeout-ms': (o) => o.fetchStallTimeoutMs,
    'tls-cert': (o) => o.tls?.cert.toString(),
    'tls-key': (o) => o.tls?.key.toString(),
    'peer-ca-file': (o) => o.peerTls?.ca?.toString(),
    'access-log': (o) => o.accessLog,
    'drain-timeout-ms': (o) => o.drainTimeoutMs,
    'version-drain-ms': (o) => o.versionDrainMs,
    workers: (o) => o.workers,
    'max-connections': (o) => o.maxConnections,
    'max-response-bytes': (o) => o.maxResponseBytes,
    'max-buffered-request-bytes': (o) => o.maxBufferedRequestBytes,
    'headers-timeout-ms': (o) => o.timeouts?.headersMs,
    'request-timeout-ms': (o) => o.timeouts?.requestMs,
    'keep-alive-timeout-ms': (o) => o.timeouts?.keepAliveMs,
    'send-timeout-ms': (o) => o.sendTimeoutMs,
    'self-repair': (o) => o.selfRepair,
    'peer-check-timeout-ms': (o) => o.peerCheckTimeoutMs,
    'peer-check-grace-ms': (o) => o.peerCheckGraceMs,
    'read-token': (o) => o.readToken,
    'read-token-file': (o) => o.readToken,
    'metrics-token': (o) => o.metricsToken,
    'metrics-token-file': (o) => o.metricsToken,
    'resp-port': (o) => o.resp?.port,
    preload: (o) => o.preload,
    'http-read-path': (o) => o.httpReadPath,
    'job-priority': (o) => o.jobPriority,
    'resp-default-store': (o) => o.resp?.defaultStore,
    'resp-max-clients': (o) => o.resp?.maxClients,
    'resp-idle-timeout-ms': (o) => o.resp?.idleTimeoutMs,
  }
  expect(Object.keys(reach).sort()).toEqual(SERVE_OPTIONS.map((o) => o.name).sort())
  expect(opts.adminToken).toBe('admin-token-from-file-0123')
  expect(opts.readToken).toBe('read-token-from-file-0123')
  expect(opts.metricsToken).toBe('metrics-token-from-file-0123')
  expect(opts.tls?.cert.toString()).toBe(certs.cert.toString())
  expect(opts.peerTls?.ca?.toString()).toBe(certs.ca.toString())
  expect(opts.allowedSources).toEqual([join(dir, 'builds'), 's3://bucket/builds'])
  for (const o of SERVE_OPTIONS) {
    if (
      [
        'admin-token',
        'read-token',
        'admin-token-file',
        'read-token-file',
        'tls-cert',
        'tls-key',
        'metrics-token',
        'metrics-token-file',
        'peer-ca-file',
        'allowed-source',
      ].includes(o.name)
    )
      continue
    const expected = o.kind === 'path' ? join(dir, `rel/${o.name}`) : sample(o)
    expect({ [o.name]: reach[o.name]!(opts) }).toEqual({ [o.name]: expected })
  }
})

describe('bad files are refused naming the file and the key', () => {
  const base = { cluster: 'c.json', 'node-id': 0, 'data-dir': 'data' }
  test.each([
    [{ ...base, dataDir: 'x' }, /node\.json: unknown key "dataDir" \(did you mean "data-dir"\?\)/],
    [{ ...base, keep_versions: 1 }, /unknown key "keep_versions" \(did you mean "keep-versions"\?\)/],
    [{ ...base, colour: 'blue' }, /unknown key "colour" \(keys are the flag names of rostore serve --help\)/],
    [{ ...base, config: 'other.json' }, /unknown key "config"/],
    [{ ...base, port: '8080' }, /"port" must be an integer, got a string \("8080"\)/],
    [{ ...base, port: 80.5 }, /"port" must be an integer, got the number 80.5/],
    [{ ...base, 'access-log': 'yes' }, /"access-log" must be true or false, got a string/],
    [{ ...base, 'allowed-source': '/srv' }, /"allowed-source" must be an array of non-empty strings, got a string/],
    [{ ...base, 'data-dir': 7 }, /"data-dir" must be a non-empty string \(a path\), got the number 7/],
    [{ ...base, bind: null }, /"bind" must be a string, got null/],
    [{ ...base, preload: 'most' }, /"preload" must be one of "index", "all", "none", got a string \("most"\)/],
    [[base], /must hold one JSON object of settings, got an array/],
  ])('%j', async (settings, message) => {
    const file = writeConfig(settings)
    await expect(readServeConfig(file)).rejects.toMatchObject({ code: 'RO_BAD_OPTION', message: expect.stringMatching(message) })
  })

  test('invalid JSON names the file', async () => {
    const file = writeConfig('{"cluster": "c.json",')
    await expect(readServeConfig(file)).rejects.toMatchObject({
      code: 'RO_BAD_OPTION',
      message: expect.stringContaining(`the config file ${file} is not valid JSON`),
    })
  })

  test('a missing or unreadable file names the file', async () => {
    const missing = join(tmp.dir, 'absent.json')
    await expect(readServeConfig(missing)).rejects.toMatchObject({
      code: 'RO_BAD_OPTION',
      message: expect.stringMatching(new RegExp(`cannot read the config file ${missing}: .*ENOENT`)),
    })
    await expect(readServeConfig(tmp.dir)).rejects.toMatchObject({ message: expect.stringMatching(/cannot read the config file .*EISDIR/) })
  })

  test('--config given twice is refused', async () => {
    await expect(serveArgs({ config: ['a.json', 'b.json'] })).rejects.toMatchObject({
      code: 'RO_BAD_OPTION',
      message: '--config was given 2 times; give it once',
    })
  })

  test('a required setting in neither place, and range checks after the merge', async () => {
    await expect(serveArgs({ config: writeConfig({ cluster: 'c.json', 'node-id': 0 }) })).rejects.toMatchObject({
      message: '--data-dir is required (on the command line or in the --config file)',
    })
    await expect(serveArgs({ config: writeConfig({ ...base, workers: 0 }) })).rejects.toMatchObject({
      message: '--workers must be an integer from 1 to 256, got 0',
    })
  })
})
