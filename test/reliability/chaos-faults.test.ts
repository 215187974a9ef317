import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import net from 'node:net'
import { join } from 'node:path'
import { loadCluster } from '../../cluster/cluster'
import { ClusterAdmin } from '../../client/cluster-admin'
import { pushStore } from '../../client/push/push-store'
import { buildVersion, numberedRecords } from '../../testkit/cluster/build-version'
import { FaultProxy } from '../../testkit/net/fault-proxy'
import { Nginx } from '../../testkit/peers/nginx'
import { freePort, json, startCluster, type TestCluster } from '../../testkit/cluster/node-process'
import { makeTmp } from '../../testkit/stores/tmp'

/**
 * The chaos suite's two newer faults work as the suite assumes (testkit/cluster/push-chaos.ts): a
 * proxy fault can hit one process's links only, or everyone's but that process's
 * (fault-proxy.ts tells connections apart by the process that opened them); and a node
 * started with ROSTORE_TEST_SLOW_DISK holds its durable writes while the control file says
 * so, and finishes them once it is released (common/test-slow-disk.ts).
 */

jest.setTimeout(60_000)
const tmp = makeTmp('rostore-chaos-faults-')
const TOKEN = 'chaos-faults-token-0123456789'
let nodes: TestCluster | undefined
let nginx: Nginx | undefined
let echo: net.Server | undefined

afterAll(async () => {
  await nodes?.killAll()
  await nginx?.dispose()
  echo?.close()
  tmp.cleanup()
})

/** One round trip through `port` from a child process: 'ok' when the byte came back, 'cut' when the link closed first. */
function childRoundTrip(port: number): { pid: number; result: Promise<string> } {
  const script = `const s=require('net').connect(${port},'127.0.0.1',()=>setTimeout(()=>s.write('x'),200));s.on('data',()=>{process.stdout.write('ok');process.exit(0)});s.on('error',()=>{});s.on('close',()=>{process.stdout.write('cut');process.exit(0)})`
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  child.stdout.on('data', (d: Buffer) => (out += d.toString()))
  return { pid: child.pid!, result: new Promise((resolve) => child.on('exit', () => resolve(out))) }
}

/** One round trip through `port` from this process. */
function ownRoundTrip(port: number): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => s.write('x'))
    s.on('data', () => {
      s.destroy()
      resolve('ok')
    })
    s.on('error', () => undefined)
    s.on('close', () => resolve('cut'))
  })
}

test("a link fault hits the pusher's connections only, or every connection but the pusher's", async () => {
  echo = net.createServer((s) => s.on('data', (d) => s.write(d)).on('error', () => undefined))
  await new Promise<void>((r) => echo!.listen(0, '127.0.0.1', r))
  const proxy = await FaultProxy.start(await freePort(), (echo.address() as net.AddressInfo).port)
  const port = proxy.port
  try {
    const pusher = childRoundTrip(port)
    proxy.pusherPid = pusher.pid
    proxy.set('cut', 'pusher')
    expect(await pusher.result).toBe('cut')
    expect(await ownRoundTrip(port)).toBe('ok')
    const again = childRoundTrip(port)
    proxy.pusherPid = again.pid
    proxy.set('cut', 'others')
    expect(await ownRoundTrip(port)).toBe('cut')
    expect(await again.result).toBe('ok')
  } finally {
    await proxy.close()
  }
})

test('a node with slow disk writes holds its swap until the disk is released, then finishes it', async () => {
  const control = join(tmp.dir, 'slow-disk')
  writeFileSync(control, '0')
  nodes = await startCluster({ dir: tmp.dir, nodes: 1, token: TOKEN, env: { ROSTORE_TEST_SLOW_DISK: control } })
  const cluster = await loadCluster(nodes.clusterFile)
  for (const v of [1, 2])
    await buildVersion({
      dir: tmp.dir,
      cluster,
      store: 'st',
      version: v,
      records: numberedRecords(50, (i) => `v${v}-${i}`),
      output: join(tmp.dir, 'www', `v${v}`),
      replication: 1,
    })
  nginx = await Nginx.launch({ root: join(tmp.dir, 'www') })
  for (const v of [1, 2])
    expect((await pushStore({ cluster, store: 'st', from: `${nginx.url}/v${v}`, adminToken: TOKEN })).status).toBe('live')
  const admin = new ClusterAdmin(cluster, TOKEN, 60_000)
  try {
    writeFileSync(control, '600000')
    let settled = false
    const swap = admin
      .node(0)
      .swap('st', 1)
      .finally(() => (settled = true))
    await nodes.nodes[0]!.waitForEvent((e) => e['event'] === 'slow-disk-wait')
    // The node still answers, on the version it served: the swap waits on its disk.
    expect(json(await nodes.nodes[0]!.request('/stores/st'))['version']).toBe(2)
    expect(settled).toBe(false)
    writeFileSync(control, '0')
    await swap
    expect(json(await nodes.nodes[0]!.request('/stores/st'))['version']).toBe(1)
  } finally {
    admin.close()
  }
})
