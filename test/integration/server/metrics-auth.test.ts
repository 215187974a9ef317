import { spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { cliPath } from '../../../common/paths'
import { startSingleNode, type NodeProcess } from '../../../testkit/cluster/node-process'
import { makeTmp } from '../../../testkit/stores/tmp'

/**
 * /metrics is open by default, also on a node whose reads need the read token; with
 * --metrics-token it needs that token (or the admin token), through a worker too.
 */
jest.setTimeout(60_000)
const tmp = makeTmp('rostore-metrics-auth-')
const ADMIN = 'metrics-admin-token-0123456789'
const READ = 'metrics-read-token-0123456789'
const METRICS = 'metrics-scrape-token-0123456789'
let node: NodeProcess | undefined

afterAll(async () => {
  if (node?.running) await node.kill9()
  tmp.cleanup()
})

const bearer = (t: string): Record<string, string> => ({ authorization: `Bearer ${t}` })

test('without a metrics token /metrics is open, even when reads need the read token', async () => {
  node = await startSingleNode({ dir: tmp.dir, token: ADMIN, workers: 2, extraArgs: ['--read-token', READ] })
  expect((await node.request('/stores')).status).toBe(401)
  const r = await node.request('/metrics')
  expect(r.status).toBe(200)
  expect(r.body.toString()).toContain('rostore_requests_total')
})

test('with --metrics-token-file, /metrics needs the metrics or the admin token', async () => {
  const file = join(tmp.dir, 'metrics-token')
  writeFileSync(file, `${METRICS}\n`)
  node = await node!.restart({ extraArgs: ['--read-token', READ, '--metrics-token-file', file] })
  const none = await node.request('/metrics')
  expect(none.status).toBe(401)
  expect(none.headers['www-authenticate']).toBe('Bearer realm="rostore-metrics"')
  expect(JSON.parse(none.body.toString())).toMatchObject({ error: { code: 'RO_UNAUTHORIZED', message: 'missing or wrong metrics token' } })
  expect((await node.request('/metrics', { headers: bearer(READ) })).status).toBe(401)
  expect((await node.request('/metrics', { headers: bearer(`${METRICS}x`) })).status).toBe(401)
  const ok = await node.request('/metrics', { headers: bearer(METRICS) })
  expect(ok.status).toBe(200)
  expect(ok.body.toString()).toContain('rostore_requests_total')
  expect((await node.request('/metrics', { headers: bearer(ADMIN) })).status).toBe(200)
  // The other public routes stay public.
  expect((await node.request('/health')).status).toBe(200)
  expect((await node.request('/status')).status).toBe(200)
})

test('a metrics token that could never authenticate is refused at start', async () => {
  await node!.sigterm()
  const o = node!.opts
  const args = ['serve', '--cluster', o.clusterFile, '--node-id', '0', '--data-dir', o.dataDir, '--metrics-token', 'has space']
  const r = spawnSync(process.execPath, [cliPath(), ...args], { encoding: 'utf8', timeout: 30_000 })
  expect(r.status).toBe(1)
  expect(r.stderr).toContain('the metrics token has whitespace at character 4')
})
