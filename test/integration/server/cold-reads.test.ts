import Redis from 'ioredis'
import { join } from 'node:path'
import { nativeFunctions } from '../../../common/native'
import { decodeValues, encodeKeys } from '../../../formats/wire/multiget'
import { makeNodeDir } from '../../../testkit/stores/make-store'
import { json, startSingleNode, type NodeProcess } from '../../../testkit/cluster/node-process'
import { evictTree } from '../../../testkit/stores/page-cache'
import { makeTmp } from '../../../testkit/stores/tmp'
import { connectIoredis } from '../../../testkit/net/redis-cli'

/**
 * A node serving a store whose files are not in the page cache (evicted before the node
 * started): every entry point answers the right values, the cold path is taken (the
 * node's own counters say so), replies keep their order on a connection, and a swap or a
 * rollback while cold reads are in flight gives every multi-key answer from one version.
 */
jest.setTimeout(120_000)
const STORE = 'cold'
const TOKEN = 'cold-reads-admin-token-0123456789'
const N = 8000
const keyOf = (i: number): string => `key-${i}`
const valueOf = (v: number, i: number): string => `v${v}|${keyOf(i)}|${'c'.repeat(900 + (i % 700))}`
/** The version a value belongs to, or undefined when it is no value of key i. */
function versionOf(value: string | null | undefined, i: number): number | undefined {
  const m = /^v(\d+)\|/.exec(value ?? '')
  return m && value === valueOf(Number(m[1]), i) ? Number(m[1]) : undefined
}

const native = nativeFunctions()
const describeNative = native ? describe : describe.skip
/** Both warm-up paths where this machine has them: the addon's io_uring and the libuv pool. */
const IOS = native?.uringProbe() === 0 ? ['uring', 'pool'] : ['pool']

describeNative.each(IOS)('cold reads on a serving node (2 workers, data evicted before it started; ROSTORE_COLD_IO=%s)', (io) => {
  const tmp = makeTmp('rostore-cold-reads-')
  let node: NodeProcess
  let redis: Redis
  /** Keys are handed out once, so each test reads records no test read before. */
  let nextKey = 0
  const freshKeys = (n: number, stride = 7): number[] => Array.from({ length: n }, () => (nextKey++ * stride) % N)

  async function coldLookups(): Promise<number> {
    const st = json<{ stores: { store: string; coldReads: { coldLookups: number } | null }[] }>(await node.request('/status'))
    return st.stores.find((s) => s.store === STORE)?.coldReads?.coldLookups ?? -1
  }

  beforeAll(async () => {
    const src: string[] = []
    for (const v of [1, 2]) {
      const dir = join(tmp.dir, 'src', `v${v}`)
      await makeNodeDir(
        dir,
        Array.from({ length: N }, (_, i): [string, string] => [keyOf(i), valueOf(v, i)]),
        { store: STORE, version: v, chunks: 2 },
      )
      src.push(dir)
    }
    const started = await startSingleNode({
      dir: tmp.dir,
      token: TOKEN,
      workers: 2,
      extraArgs: ['--resp-port', '0', '--resp-default-store', STORE],
      env: { ROSTORE_COLD_IO: io },
    })
    await started.install(STORE, src[0] as string, { swap: true })
    await started.install(STORE, src[1] as string)
    await started.sigterm()
    expect(evictTree(join(tmp.dir, 'data'))).toBeGreaterThan(4)
    node = await started.restart()
    redis = await connectIoredis(node.respPort!)
  })
  afterAll(async () => {
    redis?.disconnect()
    if (node?.running) await node.kill9()
    tmp.cleanup()
  })

  test('/status shows the store mostly out of memory, its index locked', async () => {
    const st = json<{ stores: { store: string; coldReads: Record<string, unknown> }[] }>(await node.request('/status'))
    const cold = st.stores.find((s) => s.store === STORE)?.coldReads
    expect(cold).toMatchObject({ indexLocked: true, inFlight: 0, io })
    expect(cold?.['residentFraction']).toBeLessThan(0.5)
    const metrics = (await node.request('/metrics')).body.toString()
    expect(metrics).toMatch(/^rostore_store_cold_lookups\{store="cold"\} \d+/m)
    expect(metrics).toMatch(/^rostore_store_resident_ratio\{store="cold"\} /m)
  })

  test('RESP GET, MGET and a pipeline of GETs answer the right values, in order, through the cold path', async () => {
    const before = await coldLookups()
    for (const i of freshKeys(40)) expect(await redis.get(keyOf(i))).toBe(valueOf(1, i))
    const many = freshKeys(100)
    expect(await redis.mget(...many.map(keyOf))).toEqual(many.map((i) => valueOf(1, i)))
    const piped = freshKeys(60)
    const p = redis.pipeline()
    for (const i of piped) p.get(keyOf(i))
    p.get('no-such-key')
    p.strlen(keyOf(piped[0] as number))
    const replies = (await p.exec()) ?? []
    expect(replies.map(([err, v]) => (err ? String(err) : v))).toEqual([
      ...piped.map((i) => valueOf(1, i)),
      null,
      valueOf(1, piped[0] as number).length,
    ])
    expect(await coldLookups()).toBeGreaterThan(before + 100)
  })

  test('HTTP single gets and a multi-get of 100 keys answer the right values through the cold path', async () => {
    const before = await coldLookups()
    for (const i of freshKeys(30)) {
      const r = await node.request(`/stores/${STORE}/keys/${keyOf(i)}`)
      expect(r.status).toBe(200)
      expect(r.body.toString()).toBe(valueOf(1, i))
    }
    const many = freshKeys(100)
    const r = await node.request(`/stores/${STORE}/multi-get`, { method: 'POST', body: encodeKeys([...many.map(keyOf), 'absent']) })
    expect(r.status).toBe(200)
    expect(decodeValues(r.body, many.length + 1).map((v) => v?.toString())).toEqual([...many.map((i) => valueOf(1, i)), undefined])
    expect(await coldLookups()).toBeGreaterThan(before + 50)
  })

  test('a swap and a rollback while cold reads are in flight: every MGET answers from one version, none fails', async () => {
    const clients = await Promise.all(
      Array.from({ length: 4 }, async () => {
        const c = new Redis({ host: '127.0.0.1', port: node.respPort!, lazyConnect: true, enableReadyCheck: false })
        await c.connect()
        return c
      }),
    )
    try {
      const seen = new Set<number>()
      let mixed = 0
      let wrong = 0
      let answers = 0
      const reads = async (c: Redis, rounds: number): Promise<void> => {
        for (let r = 0; r < rounds; r++) {
          const keys = freshKeys(20, 13)
          const values = await c.mget(...keys.map(keyOf))
          const versions = new Set(values.map((v, j) => versionOf(v, keys[j] as number)))
          if (versions.has(undefined)) wrong++
          if (versions.size > 1) mixed++
          for (const v of versions) if (v !== undefined) seen.add(v)
          answers++
        }
      }
      const load = Promise.all(clients.map((c) => reads(c, 15)))
      const swap = await node.admin('POST', `/stores/${STORE}/swap`, { version: 2 })
      expect(swap.status).toBe(200)
      const rollback = await node.admin('POST', `/stores/${STORE}/rollback`)
      expect(rollback.status).toBe(200)
      await load
      expect({ wrong, mixed, answers }).toEqual({ wrong: 0, mixed: 0, answers: 60 })
      expect(seen.size).toBeGreaterThan(0)
    } finally {
      for (const c of clients) c.disconnect()
    }
  })
})
