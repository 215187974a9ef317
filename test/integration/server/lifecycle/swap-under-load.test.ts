import { Agent } from 'node:http'
import { join } from 'node:path'
import { makeTmp } from '../../../../testkit/stores/tmp'
import { json, request, startSingleNode, type NodeProcess } from '../../../../testkit/cluster/node-process'
import { decodeValues, encodeKeys } from '../../../../formats/wire/multiget'
import { KEY_COUNT, keyOf, makeVersions, STORE, valueOf, versionOfValue } from '../fixture'

const TOKEN = 'load-test-token-0123456789'

describe('reads during swaps and rollbacks (real node, concurrent load)', () => {
  const tmp = makeTmp('rostore-load-')
  let node: NodeProcess
  afterAll(async () => {
    if (node?.running) await node.kill9()
    tmp.cleanup()
  })

  test('only correct values of one version, zero errors', async () => {
    const src = await makeVersions(tmp.dir, [1, 2, 3, 4])
    node = await startSingleNode({ dir: tmp.dir, dataDir: join(tmp.dir, 'data'), token: TOKEN, keepVersions: 5 })
    for (const v of [1, 2, 3, 4]) await node.install(STORE, src[v]!)
    expect(json(await node.admin('POST', `/stores/${STORE}/swap`, { version: 1 }))).toMatchObject({ to: 1 })

    const agent = new Agent({ keepAlive: true, maxSockets: 32 })
    const failures: string[] = []
    const seen = new Set<number>()
    let gets = 0
    let multiGets = 0
    let stop = false

    const getWorker = async (): Promise<void> => {
      while (!stop) {
        const i = Math.floor(Math.random() * (KEY_COUNT + 20)) // some absent keys
        try {
          const r = await request(`${node.url}/stores/${STORE}/keys/${keyOf(i)}`, { agent })
          const hv = Number(r.headers['x-rostore-version'])
          seen.add(hv)
          if (i >= KEY_COUNT) {
            if (r.status !== 404) failures.push(`absent ${i}: ${r.status}`)
          } else if (r.status !== 200 || r.body.toString() !== valueOf(hv, i)) {
            failures.push(`get ${i}: ${r.status} v${hv} ${r.body.toString().slice(0, 40)}`)
          }
        } catch (err) {
          failures.push(`get ${i}: ${(err as Error).message}`)
        }
        gets++
      }
    }

    const multiWorker = async (): Promise<void> => {
      while (!stop) {
        const idx = Array.from({ length: 60 }, () => Math.floor(Math.random() * KEY_COUNT))
        try {
          const r = await request(`${node.url}/stores/${STORE}/multi-get`, { method: 'POST', body: encodeKeys(idx.map(keyOf)), agent })
          if (r.status !== 200) {
            failures.push(`multi-get: ${r.status} ${r.body.toString().slice(0, 100)}`)
            continue
          }
          const hv = Number(r.headers['x-rostore-version'])
          const versions = new Set(
            decodeValues(r.body, idx.length).map((v, j) => (v === undefined ? -1 : versionOfValue(v.toString(), idx[j]!))),
          )
          if (versions.size !== 1 || !versions.has(hv)) failures.push(`multi-get mixed versions ${[...versions].join(',')} header ${hv}`)
        } catch (err) {
          failures.push(`multi-get: ${(err as Error).message}`)
        }
        multiGets++
      }
    }

    const workers = [...Array.from({ length: 8 }, getWorker), ...Array.from({ length: 3 }, multiWorker)]
    // Swap and roll back in a loop while the load runs.
    const ops: string[] = []
    let live = 1
    for (let round = 0; round < 60; round++) {
      let r
      if (round % 4 === 3 && live > 1) {
        r = await node.admin('POST', `/stores/${STORE}/rollback`)
      } else {
        const target = (live % 4) + 1
        r = await node.admin('POST', `/stores/${STORE}/swap`, { version: target })
      }
      const body = json(r)
      if (r.status !== 200) throw new Error(`admin op failed: ${r.status} ${r.body.toString()}`)
      live = Number(body['to'])
      ops.push(`${body['kind']}->${live}`)
      await new Promise((res) => setTimeout(res, 15))
    }
    stop = true
    await Promise.all(workers)
    agent.destroy()

    expect(failures.slice(0, 10)).toEqual([])
    expect(gets).toBeGreaterThan(500)
    expect(multiGets).toBeGreaterThan(50)
    expect(seen.size).toBeGreaterThanOrEqual(3)
    expect(ops.filter((o) => o.startsWith('rollback')).length).toBeGreaterThan(5)

    // Old readers all closed once drained; metrics counted the swaps and rollbacks.
    const status = json<{ stores: { draining: number; version: number }[] }>(await node.request('/status'))
    expect(status.stores[0]).toMatchObject({ version: live, draining: 0 })
    const metrics = (await node.request('/metrics')).body.toString()
    const swaps = Number(/rostore_swaps_total\{store="users"\} (\d+)/.exec(metrics)?.[1])
    const rollbacks = Number(/rostore_rollbacks_total\{store="users"\} (\d+)/.exec(metrics)?.[1])
    expect(swaps + rollbacks).toBe(61)
    expect(metrics).not.toMatch(/rostore_errors_total\{/)
    expect(metrics).toMatch(/process_resident_memory_bytes \d+/)
  })
})
