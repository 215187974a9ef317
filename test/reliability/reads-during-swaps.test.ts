import { Agent, request as httpRequest } from 'node:http'
import { join } from 'node:path'
import { parseCluster } from '../../cluster/cluster'
import { StoreClient } from '../../client/store-client'
import { decodeValues, encodeKeys } from '../../formats/wire/multiget'
import { json, request, startSingleNode, type NodeProcess } from '../../testkit/cluster/node-process'
import {
  faultSeed,
  keyName,
  makeVersionDir,
  randomInt,
  reportFigures,
  seededRandom,
  sleep,
  versionOfValue,
  versionValue,
} from '../../testkit/cluster/reliability-kit'
import { makeTmp } from '../../testkit/stores/tmp'

/**
 * Promise 5 of docs/RELIABILITY.md: reads survive swaps. One real node, a sustained
 * concurrent read load on loopback (keep-alive single gets, multi-gets of many batches,
 * one consumer reading its multi-gets slowly so the node has to wait for it mid-response,
 * the routing client), while 100 swaps and rollbacks run in a row (and, beside them,
 * another version is deleted and installed again and again). Every value names its version:
 * a read must come back complete, correct and from the one version the response names.
 * test/integration/server/lifecycle/swap-under-load.test.ts does 60 with smaller multi-gets.
 */

jest.setTimeout(120_000)
const tmp = makeTmp('rostore-reads-')
const TOKEN = 'reads-during-swaps-token-0123456789'
const STORE = 'users'
const KEYS = 2000
const VERSIONS = [1, 2, 3, 4]
const CHURN_VERSION = 9
/** Keys whose values are 5,000 bytes (versionValue): the slow consumer asks for them, repeated. */
const BIG_VALUE_KEYS = Array.from({ length: KEYS }, (_, i) => i).filter((i) => i % 97 === 0)
const OPS = 100
const SEED = faultSeed(5_100)
const rand = seededRandom(SEED)

let node: NodeProcess
afterAll(async () => {
  if (node?.running) await node.kill9()
  tmp.cleanup()
})

test(`${OPS} swaps and rollbacks under a concurrent read load: zero failed reads, zero mixed versions`, async () => {
  const src: Record<number, string> = {}
  for (const v of [...VERSIONS, CHURN_VERSION])
    src[v] = await makeVersionDir(join(tmp.dir, 'src', `v${v}`), { store: STORE, version: v, keys: KEYS })
  node = await startSingleNode({ dir: tmp.dir, dataDir: join(tmp.dir, 'data'), token: TOKEN, keepVersions: 10 })
  for (const v of VERSIONS) await node.install(STORE, src[v]!)
  expect((await node.admin('POST', `/stores/${STORE}/swap`, { version: VERSIONS[0] })).status).toBe(200)

  const agent = new Agent({ keepAlive: true, maxSockets: 64 })
  const failures: string[] = []
  const seen = new Set<number>()
  const counts = {
    gets: 0,
    absentGets: 0,
    multiGets: 0,
    multiGetKeys: 0,
    slowMultiGets: 0,
    slowSpanningSwaps: 0,
    swapsUnderSlowResponses: 0,
    clientReads: 0,
    churn: 0,
  }
  let opsDone = 0
  let stop = false
  const fail = (what: string): void => {
    if (failures.length < 50) failures.push(what)
  }

  /** Values of a multi-get response, checked: all present, all of the version the header names. */
  const checkMulti = (label: string, status: number, header: unknown, body: Buffer, idx: number[]): void => {
    if (status !== 200) return fail(`${label}: status ${status} ${body.toString().slice(0, 100)}`)
    const hv = Number(header)
    seen.add(hv)
    let values: (Buffer | undefined)[]
    try {
      values = decodeValues(body, idx.length)
    } catch (err) {
      return fail(`${label}: ${(err as Error).message}`)
    }
    const versions = new Set(values.map((v, j) => (v === undefined ? -1 : versionOfValue(v.toString(), idx[j]!))))
    if (versions.size !== 1 || !versions.has(hv)) fail(`${label}: versions ${[...versions].join(',')} in a response of version ${hv}`)
  }

  const getLoop = async (w: number): Promise<void> => {
    for (let n = 0; !stop; n++) {
      const i = (w * 7919 + n * 104729) % (KEYS + 30) // some absent keys
      try {
        const r = await request(`${node.url}/stores/${STORE}/keys/${keyName(i)}`, { agent, timeoutMs: 10_000 })
        const hv = Number(r.headers['x-rostore-version'])
        seen.add(hv)
        if (i >= KEYS) {
          if (r.status !== 404 || r.body.length !== 0) fail(`get absent ${i}: ${r.status}`)
          counts.absentGets++
        } else if (r.status !== 200 || r.body.toString() !== versionValue(hv, i)) {
          fail(`get ${i}: ${r.status} v${hv} ${r.body.toString().slice(0, 40)}`)
        }
      } catch (err) {
        fail(`get ${i}: ${(err as Error).message}`)
      }
      counts.gets++
    }
  }

  const multiLoop = async (w: number): Promise<void> => {
    for (let n = 0; !stop; n++) {
      // 1,000 keys (repeats allowed): about four of the node's 256-key batches.
      const idx = Array.from({ length: 1000 }, (_, j) => (w * 31 + n * 17 + j * 7) % KEYS)
      try {
        const r = await request(`${node.url}/stores/${STORE}/multi-get`, {
          method: 'POST',
          body: encodeKeys(idx.map(keyName)),
          agent,
          timeoutMs: 20_000,
        })
        checkMulti('multi-get', r.status, r.headers['x-rostore-version'], r.body, idx)
      } catch (err) {
        fail(`multi-get: ${(err as Error).message}`)
      }
      counts.multiGets++
      counts.multiGetKeys += idx.length
    }
  }

  /**
   * 1,500 values of 5 KB (~7.5 MB, beyond what socket buffers hold) read with a pause after
   * every chunk: the node waits on back pressure mid-response, swaps go on meanwhile, and
   * the rest of the response must still come from the version it started with.
   */
  const slowMultiLoop = async (): Promise<void> => {
    const idx = Array.from({ length: 1500 }, (_, j) => BIG_VALUE_KEYS[j % BIG_VALUE_KEYS.length]!)
    const body = encodeKeys(idx.map(keyName))
    while (!stop) {
      const opsBefore = opsDone
      try {
        const r = await new Promise<{ status: number; header: unknown; body: Buffer }>((resolve, reject) => {
          const req = httpRequest(
            {
              host: '127.0.0.1',
              port: node.port,
              method: 'POST',
              path: `/stores/${STORE}/multi-get`,
              agent,
              headers: { 'content-length': String(body.length) },
            },
            (res) => {
              const parts: Buffer[] = []
              res.on('data', (c: Buffer) => {
                parts.push(c)
                res.pause()
                setTimeout(() => res.resume(), 2)
              })
              res.on('end', () =>
                resolve({ status: res.statusCode ?? 0, header: res.headers['x-rostore-version'], body: Buffer.concat(parts) }),
              )
              res.on('error', reject)
            },
          )
          req.on('error', reject)
          req.setTimeout(30_000, () => req.destroy(new Error('slow multi-get timed out')))
          req.end(body)
        })
        checkMulti('slow multi-get', r.status, r.header, r.body, idx)
        if (opsDone > opsBefore) counts.slowSpanningSwaps++
        counts.swapsUnderSlowResponses += opsDone - opsBefore
      } catch (err) {
        fail(`slow multi-get: ${(err as Error).message}`)
      }
      counts.slowMultiGets++
      counts.multiGetKeys += idx.length
    }
  }

  const clientLoop = async (): Promise<void> => {
    const cluster = parseCluster({ name: 'test-cluster', nodes: [{ id: 0, host: '127.0.0.1', port: node.port, partitions: [0, 1] }] })
    const client = await StoreClient.connect({ cluster, store: STORE, timeoutMs: 10_000 })
    try {
      for (let n = 0; !stop; n++) {
        const idx = Array.from({ length: 200 }, (_, j) => (n * 13 + j * 3) % KEYS)
        try {
          const values = await client.getMany(idx.map(keyName))
          const versions = new Set(values.map((v, j) => (v === undefined ? -1 : (versionOfValue(v.toString(), idx[j]!) ?? -2))))
          if (versions.size !== 1 || versions.has(-1) || versions.has(-2)) fail(`client getMany: versions ${[...versions].join(',')}`)
          const one = await client.get(keyName(n % KEYS))
          if (one === undefined || versionOfValue(one.toString(), n % KEYS) === undefined)
            fail(`client get ${n % KEYS}: ${one?.toString().slice(0, 40)}`)
        } catch (err) {
          fail(`client: ${(err as Error).message}`)
        }
        counts.clientReads += 201
      }
    } finally {
      client.close()
    }
  }

  /** Beside the swaps: another version deleted and installed again, over and over. */
  const churnLoop = async (): Promise<void> => {
    while (!stop) {
      const r = await node.admin('POST', `/stores/${STORE}/install`, { path: src[CHURN_VERSION] })
      if (r.status === 202) await node.waitJob(String(json(r)['id']))
      const d = await node.admin('DELETE', `/stores/${STORE}/versions/${CHURN_VERSION}`)
      if (d.status !== 200) fail(`churn delete: ${d.status} ${d.body.toString().slice(0, 100)}`)
      counts.churn++
    }
  }

  const loops = [...Array.from({ length: 4 }, (_, w) => getLoop(w)), multiLoop(0), slowMultiLoop(), clientLoop(), churnLoop()]

  await sleep(200)
  const ops = { swaps: 0, rollbacks: 0, elapsedMs: [] as number[] }
  let live = VERSIONS[0]!
  const started = Date.now()
  for (let round = 0; round < OPS; round++) {
    const older = VERSIONS.filter((v) => v < live)
    let r
    if (older.length > 0 && rand() < 0.4) {
      r = await node.admin('POST', `/stores/${STORE}/rollback`)
    } else {
      const others = VERSIONS.filter((v) => v !== live)
      r = await node.admin('POST', `/stores/${STORE}/swap`, { version: others[randomInt(rand, 0, others.length - 1)] })
    }
    if (r.status !== 200) throw new Error(`admin op ${round} failed: ${r.status} ${r.body.toString()}`)
    const body = json(r)
    live = Number(body['to'])
    if (body['kind'] === 'rollback') ops.rollbacks++
    else ops.swaps++
    ops.elapsedMs.push(Number(body['elapsedMs']))
    opsDone++
    await sleep(randomInt(rand, 5, 30))
  }
  const swapPhaseMs = Date.now() - started
  stop = true
  await Promise.all(loops)
  agent.destroy()

  const reads = counts.gets + counts.multiGetKeys + counts.clientReads
  const sorted = [...ops.elapsedMs].sort((a, b) => a - b)
  reportFigures(
    'reads-during-swaps',
    `reads-during-swaps: ${OPS} swaps and rollbacks (${ops.swaps} swaps, ${ops.rollbacks} rollbacks, p50 ${sorted[Math.floor(sorted.length / 2)]} ms, max ${sorted[sorted.length - 1]} ms) in ${(swapPhaseMs / 1000).toFixed(1)} s; ${reads} key reads (${counts.gets} single gets, ${counts.multiGets + counts.slowMultiGets} multi-gets of ${counts.multiGetKeys} keys including ${counts.slowMultiGets} slow ones of 7.5 MB, ${counts.slowSpanningSwaps} of them spanning ${counts.swapsUnderSlowResponses} swaps, ${counts.clientReads} through the routing client), ${seen.size} versions seen, ${counts.churn} delete+install cycles beside; errors: ${failures.length}, mixed-version responses: ${failures.filter((f) => /versions/.test(f)).length}`,
    {
      seed: SEED,
      ops: OPS,
      ...ops,
      elapsedMs: undefined,
      swapPhaseMs,
      reads,
      ...counts,
      versionsSeen: [...seen].sort(),
      errors: failures.length,
      failures,
    },
  )

  expect(failures).toEqual([])
  expect(ops.swaps + ops.rollbacks).toBe(OPS)
  expect(ops.rollbacks).toBeGreaterThan(20)
  expect(counts.slowSpanningSwaps).toBeGreaterThan(0)
  expect(counts.churn).toBeGreaterThan(0)
  expect(seen.size).toBeGreaterThanOrEqual(VERSIONS.length)

  // Every replaced reader closed once drained; the node counted no server-side error.
  const status = json<{ stores: { draining: number; version: number }[] }>(await node.request('/status'))
  expect(status.stores[0]).toMatchObject({ version: live, draining: 0 })
  const metrics = (await node.request('/metrics')).body.toString()
  expect(metrics).not.toMatch(/rostore_errors_total\{/)
  const swaps = Number(/rostore_swaps_total\{store="users"\} (\d+)/.exec(metrics)?.[1] ?? 0)
  const rollbacks = Number(/rostore_rollbacks_total\{store="users"\} (\d+)/.exec(metrics)?.[1] ?? 0)
  expect(swaps + rollbacks).toBe(OPS + 1)
})
