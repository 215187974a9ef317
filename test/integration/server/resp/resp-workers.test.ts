import Redis from 'ioredis'
import { cli } from '../../../../testkit/net/redis-cli'
import { makeTmp } from '../../../../testkit/stores/tmp'
import { startSingleNode, type NodeProcess } from '../../../../testkit/cluster/node-process'
import { KEY_COUNT, keyOf, makeVersions, STORE, versionOfValue } from '../fixture'

/**
 * The RESP port of a node with 2 serving workers (real `rostore serve --workers 2`): every
 * worker runs its own listener on the shared port (node:cluster hands the connections out
 * to the workers, as for HTTP), reads the stores the supervisor makes live, checks the read
 * token, and /metrics sums the RESP counters of both.
 */
jest.setTimeout(120_000)
const ADMIN = 'resp-workers-admin-0123456789'
const READ = 'resp-workers-read-9876543210'
const WORKERS = 2
const CONNECTIONS = 16

function connect(node: NodeProcess): Redis {
  return new Redis({
    host: '127.0.0.1',
    port: node.respPort!,
    password: READ,
    lazyConnect: true,
    enableReadyCheck: false,
    maxRetriesPerRequest: 1,
  })
}

/** Sum of a counter's samples with these labels in the node's /metrics text. */
function counter(text: string, name: string, labels: string): number {
  let sum = 0
  for (const line of text.split('\n')) if (line.startsWith(`${name}{${labels}}`)) sum += Number(line.split(' ').pop())
  return sum
}

describe('RESP on a node with 2 serving workers', () => {
  const tmp = makeTmp('rostore-resp-workers-')
  let node: NodeProcess
  let src: Record<number, string>
  const clients: Redis[] = []

  beforeAll(async () => {
    src = await makeVersions(tmp.dir, [1, 2, 3])
    // --port 0 and --resp-port 0: each worker's second listen(0) must get the RESP port,
    // not share the HTTP one (node:cluster keys port-0 listens by their order in a worker).
    node = await startSingleNode({
      dir: tmp.dir,
      token: ADMIN,
      workers: WORKERS,
      keepVersions: 5,
      env: { ROSTORE_READ_TOKEN: READ },
      extraArgs: ['--resp-port', '0', '--resp-default-store', STORE],
    })
    await node.install(STORE, src[1]!, { swap: true })
    await node.install(STORE, src[2]!)
    await node.install(STORE, src[3]!)
  })
  afterAll(async () => {
    for (const c of clients) c.disconnect()
    if (node?.running) await node.kill9()
    tmp.cleanup()
  })

  test('many connections are served by both workers; answers are right; /metrics sums their commands', async () => {
    expect(node.respPort).toBeDefined()
    expect(node.respPort).not.toBe(node.port)
    const before = (await node.request('/metrics')).body.toString()
    const get0 = counter(before, 'rostore_resp_commands_total', 'command="get"')
    const mget0 = counter(before, 'rostore_resp_commands_total', 'command="mget"')
    for (let i = 0; i < CONNECTIONS; i++) clients.push(connect(node))
    await Promise.all(clients.map((c) => c.connect()))
    // Every connection is its own TCP connection, dealt round-robin to the workers.
    // INFO names no process id (docs/SECURITY.md); run_id is one per serving process.
    const runIds = await Promise.all(clients.map(async (c) => /run_id:([0-9a-f]+)/.exec(await c.info('server'))![1]))
    expect([...node.workerPids().values()]).toHaveLength(WORKERS)
    expect(new Set(runIds).size).toBe(WORKERS)

    let gets = 0
    let mgets = 0
    await Promise.all(
      clients.map(async (c, n) => {
        for (let round = 0; round < 5; round++) {
          const i = (n * 37 + round * 11) % KEY_COUNT
          expect(versionOfValue((await c.get(keyOf(i)))!, i)).toBe(1)
          gets++
          const keys = Array.from({ length: 50 }, (_, j) => (i + j) % KEY_COUNT)
          const values = await c.mget(...keys.map(keyOf), 'absent-key')
          mgets++
          expect(values).toHaveLength(51)
          expect(values[50]).toBeNull()
          keys.forEach((k, j) => expect(versionOfValue(values[j]!, k)).toBe(1))
        }
      }),
    )
    // The read token is checked by every worker (a connection each, so both are asked).
    for (let i = 0; i < 2 * WORKERS; i++) expect(await cli(node.respPort!, 'GET', keyOf(1))).toBe('(error) NOAUTH Authentication required.')
    const after = (await node.request('/metrics')).body.toString()
    expect(counter(after, 'rostore_resp_commands_total', 'command="get"') - get0).toBe(gets + 2 * WORKERS)
    expect(counter(after, 'rostore_resp_commands_total', 'command="mget"') - mget0).toBe(mgets)
    expect(counter(after, 'rostore_resp_keys_total', 'store="users",source="local",result="miss"')).toBeGreaterThanOrEqual(mgets)
  })

  test('swaps under RESP reads: no error, every MGET from one version, versions never go back', async () => {
    const keys = Array.from({ length: KEY_COUNT }, (_, i) => keyOf(i))
    let stop = false
    let reads = 0
    // Readers that have seen version 3 since the last swap returned (then they may stop).
    const sawFinal = new Set<number>()
    let final = 0
    const reader = async (c: Redis, n: number): Promise<void> => {
      let last = 0
      while (!stop) {
        const values = await c.mget(...keys)
        const version = versionOfValue(values[0]!, 0)!
        values.forEach((v, i) => expect(versionOfValue(v!, i)).toBe(version))
        expect(version).toBeGreaterThanOrEqual(last)
        last = version
        const one = n % KEY_COUNT
        const v = versionOfValue((await c.get(keyOf(one)))!, one)!
        expect(v).toBeGreaterThanOrEqual(last)
        last = v
        reads++
        if (final > 0 && last === final) sawFinal.add(n)
      }
    }
    const running = clients.map((c, n) => reader(c, n))
    const failed = Promise.race(running).then(() => undefined)
    for (const version of [2, 3]) {
      const r = await node.admin('POST', `/stores/${STORE}/swap`, { version })
      expect(r.status).toBe(200)
    }
    final = 3
    // Every reader goes on until it has read the final version (a swap is on every worker once answered).
    await Promise.race([
      new Promise<void>((resolve) => {
        const check = (): void => (sawFinal.size === clients.length ? resolve() : void setImmediate(check))
        check()
      }),
      failed,
    ])
    stop = true
    await Promise.all(running)
    expect(sawFinal.size).toBe(clients.length)
    expect(reads).toBeGreaterThan(clients.length)
    // Fresh connections, on either worker, read version 3 only.
    const fresh = Array.from({ length: 4 }, () => connect(node))
    try {
      await Promise.all(fresh.map((c) => c.connect()))
      for (const c of fresh) expect(versionOfValue((await c.get(keyOf(7)))!, 7)).toBe(3)
    } finally {
      for (const c of fresh) c.disconnect()
    }
  })
})
