import { existsSync } from 'node:fs'
import { Agent } from 'node:http'
import { decodeValues, encodeKeys } from '../../../../formats/wire/multiget'
import { makeTmp } from '../../../../testkit/stores/tmp'
import { json, startSingleNode, type NodeProcess } from '../../../../testkit/cluster/node-process'
import { KEY_COUNT, keyOf, makeVersions, STORE, versionOfValue } from '../fixture'

const TOKEN = 'workers-token-0123456789'
const WORKERS = 4

/** A GET on a fresh connection: node:cluster deals connections round-robin over the workers. */
async function freshGet(node: NodeProcess, i: number): Promise<{ version: number; value: string }> {
  const r = await node.request(`/stores/${STORE}/keys/${keyOf(i)}`, { agent: false })
  if (r.status !== 200) throw new Error(`GET ${keyOf(i)}: ${r.status} ${r.body.toString()}`)
  return { version: Number(r.headers['x-rostore-version']), value: r.body.toString() }
}

describe('a node with 4 serving workers (real processes)', () => {
  const tmp = makeTmp('rostore-workers-')
  let node: NodeProcess
  beforeAll(async () => {
    const src = await makeVersions(tmp.dir, [1, 2, 3])
    node = await startSingleNode({ dir: tmp.dir, token: TOKEN, workers: WORKERS, keepVersions: 5 })
    await node.install(STORE, src[1]!, { swap: true })
    await node.install(STORE, src[2]!)
    await node.install(STORE, src[3]!)
  })
  afterAll(async () => {
    if (node?.running) await node.kill9()
    tmp.cleanup()
  })

  test('every worker serves the new version as soon as a swap or rollback returns', async () => {
    const status = json<{ workers: unknown; stores: { accessMode: string }[] }>(await node.request('/status'))
    expect(status.workers).toEqual({ configured: WORKERS, serving: WORKERS, restarts: 0 })
    // Every worker reads the live version the same way: memory-mapped, unless forced to pread.
    expect(status.stores[0]!.accessMode).toBe(process.env['ROSTORE_NATIVE'] === '0' ? 'pread' : 'mmap')
    const steps: [string, object | undefined, number][] = [
      ['swap', { version: 2 }, 2],
      ['swap', { version: 3 }, 3],
      ['rollback', undefined, 2],
      ['rollback', { to: 1 }, 1],
      ['swap', { version: 3 }, 3],
    ]
    for (const [op, body, want] of steps) {
      const r = await node.admin('POST', `/stores/${STORE}/${op}`, body)
      expect(r.status).toBe(200)
      // 4 connections per worker: each of them must already read the new version.
      const answers = await Promise.all(Array.from({ length: 4 * WORKERS }, (_, i) => freshGet(node, i)))
      for (const [i, a] of answers.entries()) {
        expect(a.version).toBe(want)
        expect(versionOfValue(a.value, i)).toBe(want)
      }
    }
  })

  test('reads during swaps and rollbacks in a loop: every multi-get answers from one version', async () => {
    const keys = Array.from({ length: KEY_COUNT }, (_, i) => keyOf(i))
    const body = encodeKeys(keys)
    let stop = false
    let reads = 0
    const seen = new Set<number>()
    const reader = async (): Promise<void> => {
      // One keep-alive connection per reader, so the readers sit on different workers.
      const agent = new Agent({ keepAlive: true, maxSockets: 1 })
      try {
        while (!stop) {
          const r = await node.request(`/stores/${STORE}/multi-get`, { method: 'POST', body, agent })
          expect(r.status).toBe(200)
          const version = Number(r.headers['x-rostore-version'])
          const values = decodeValues(r.body, keys.length)
          values.forEach((v, i) => expect(versionOfValue(v!.toString(), i)).toBe(version))
          seen.add(version)
          reads++
        }
      } finally {
        agent.destroy()
      }
    }
    const readers = Array.from({ length: 2 * WORKERS }, () => reader())
    const targets = [1, 2, 3]
    // 12 swaps, each waiting for reads on it: 4 processes and 8 readers share 2 cores in CI.
    for (let i = 0; i < 12; i++) {
      const r = await node.admin('POST', `/stores/${STORE}/swap`, { version: targets[i % 3] })
      expect(r.status).toBe(200)
      // Let the readers see each version (progress, not time).
      const before = reads
      while (reads < before + WORKERS) await new Promise((res) => setImmediate(res))
    }
    stop = true
    await Promise.all(readers)
    expect(seen).toEqual(new Set(targets))
  }, 240_000)

  test('/metrics sums every worker; a worker killed with -9 is replaced while the others serve', async () => {
    const count = async (): Promise<number> => {
      const text = (await node.request('/metrics')).body.toString()
      const m = new RegExp(`rostore_requests_total\\{store="${STORE}",op="get",status="200"\\} (\\d+)`).exec(text)
      return Number(m?.[1] ?? 0)
    }
    const before = await count()
    await Promise.all(Array.from({ length: 8 * WORKERS }, (_, i) => freshGet(node, i)))
    expect(await count()).toBe(before + 8 * WORKERS)

    const pids = node.workerPids()
    expect(pids.size).toBe(WORKERS)
    const victim = pids.get(1)!
    process.kill(victim, 'SIGKILL')
    await node.waitForEvent((e) => e['event'] === 'worker-exited' && e['pid'] === victim)
    // The others keep answering while index 1 restarts (refused connections are retried).
    let answered = 0
    const restarted = node.waitForEvent((e) => e['event'] === 'worker-serving' && e['index'] === 1 && e['pid'] !== victim)
    let back = false
    void restarted.then(() => (back = true))
    for (let i = 0; !back && i < 20_000; i++) {
      try {
        await freshGet(node, answered % KEY_COUNT)
        answered++
      } catch {
        // the connection landed on the dead worker's slot: retry
      }
      await new Promise((res) => setTimeout(res, 5))
    }
    await restarted
    expect(answered).toBeGreaterThan(0)
    expect(json(await node.request('/status'))['workers']).toEqual({ configured: WORKERS, serving: WORKERS, restarts: 1 })
    const answers = await Promise.all(Array.from({ length: 4 * WORKERS }, (_, i) => freshGet(node, i)))
    for (const a of answers) expect(a.version).toBe(3)
  })

  test('SIGTERM drains every worker and the node exits 0', async () => {
    const pids = [...node.workerPids().values()]
    expect((await node.sigterm()).code).toBe(0)
    for (const pid of pids) expect(existsSync(`/proc/${pid}`)).toBe(false)
  })
})
