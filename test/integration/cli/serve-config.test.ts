import { spawnSync } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { cliPath } from '../../../common/paths'
import { json, NodeProcess, writeClusterFile } from '../../../testkit/cluster/node-process'
import { makeTmp } from '../../../testkit/stores/tmp'

/**
 * A real `rostore serve --config node.json`: the file alone starts the node (paths relative
 * to the file), its settings are in force, flags given beside it win, and a bad file stops
 * the command before anything starts, naming the key.
 */
jest.setTimeout(60_000)
const tmp = makeTmp('rostore-serve-config-it-')
const ADMIN = 'config-admin-token-0123456789'
const READ = 'config-read-token-0123456789'
let node: NodeProcess | undefined
const conf = join(tmp.dir, 'etc')
const configFile = join(conf, 'node.json')

beforeAll(async () => {
  mkdirSync(join(conf, 'builds'), { recursive: true })
  await writeClusterFile(conf, { nodes: 1 })
  writeFileSync(join(conf, 'admin-token'), `${ADMIN}\n`)
  writeFileSync(join(conf, 'read-token'), `${READ}\n`)
  const settings = {
    cluster: 'cluster.json',
    'node-id': 0,
    'data-dir': 'data',
    port: 0,
    workers: 1,
    'keep-versions': 5,
    preload: 'none',
    'admin-token-file': 'admin-token',
    'read-token-file': 'read-token',
    'allowed-source': ['builds'],
    'resp-port': 0,
    'access-log': true,
  }
  writeFileSync(configFile, JSON.stringify(settings, null, 2))
})

afterAll(async () => {
  if (node?.running) await node.kill9()
  tmp.cleanup()
})

function start(extraArgs: string[] = []): Promise<NodeProcess> {
  return NodeProcess.start({ clusterFile: '', nodeId: 0, dataDir: '', configFile, token: ADMIN, extraArgs })
}

test('the config file alone starts the node with its settings', async () => {
  node = await start()
  const status = json(await node.admin('GET', '/status'))
  expect(status['node']).toMatchObject({
    keepVersions: 5,
    preload: 'none',
    dataDir: join(conf, 'data'),
    allowedSources: [join(conf, 'builds')],
  })
  expect((await node.request('/stores')).status).toBe(401)
  expect((await node.request('/stores', { headers: { authorization: `Bearer ${READ}` } })).status).toBe(200)
  expect(node.respPort).toEqual(expect.any(Number))
  await node.waitForEvent((e) => e['event'] === 'request' && e['op'] === 'stores', 5_000)
  await node.sigterm()
})

test('flags given beside --config win over the file', async () => {
  const other = 'cli-read-token-0123456789'
  node = await start(['--keep-versions', '1', '--read-token', other, '--no-access-log'])
  expect(json(await node.admin('GET', '/status'))['node']).toMatchObject({ keepVersions: 1, preload: 'none' })
  expect((await node.request('/stores', { headers: { authorization: `Bearer ${READ}` } })).status).toBe(401)
  expect((await node.request('/stores', { headers: { authorization: `Bearer ${other}` } })).status).toBe(200)
  await node.sigterm()
  expect(node.events().some((e) => e['event'] === 'request')).toBe(false)
})

test.each([
  [{ cluster: 'cluster.json', 'node-id': 0, 'data-dir': 'data', dataDir: 'x' }, 'unknown key "dataDir" (did you mean "data-dir"?)'],
  [{ cluster: 'cluster.json', 'node-id': 0, 'data-dir': 'data', workers: '2' }, '"workers" must be an integer, got a string ("2")'],
])('a bad file exits 1 before starting, naming the key: %j', (settings, message) => {
  const file = join(tmp.fresh(), 'bad.json')
  writeFileSync(file, JSON.stringify(settings))
  const r = spawnSync(process.execPath, [cliPath(), 'serve', '--config', file], { encoding: 'utf8', timeout: 30_000 })
  expect(r.status).toBe(1)
  expect(r.stderr).toBe(`rostore: ${file}: ${message} [RO_BAD_OPTION]\n`)
})
