/**
 * The HTTP rows of 2c: one node (`rostore serve`, one worker, pinned to the server core)
 * serving the zstd + dictionary build of the realistic values, read by multi-gets of
 * uniform present keys from this process, values plain (the node decompresses) or stored
 * (`?values=stored`: the node sends the frames, this client decompresses them with the
 * version's dictionary, as `StoreClient` with `decompress: 'client'` does). Per key: the
 * node's CPU, this client's CPU (the decompression included), and the response bytes.
 * Runs are interleaved (plain, stored, plain, ...).
 */
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { NodeClient } from '../../client/node-client'
import { ValueDecoders } from '../../client/stored-reads'
import { mulberry32 } from '../../common/prng'
import { stageNodeDir } from '../../swapper/disk/install'
import { ensureDir, keyOf, workRoot } from '../kit/data'
import type { BenchContext } from '../kit/report'
import { benchCluster, STORE } from '../kit/rostore'
import { fmt, mdTable } from '../kit/stats'
import type { CompressionExtra, KeptStore } from '../lookup/compression-bench'
import { ServeProcess } from './serve-process'

/** Keys per multi-get, and multi-gets in flight. */
const KEYS = 100
const IN_FLIGHT = 8

type Mode = 'plain' | 'stored'

interface Run {
  readonly keys: number
  readonly seconds: number
  readonly serverCpu: number
  readonly clientCpu: number
  readonly bytes: number
}

/** `requests` multi-gets of KEYS uniform keys, IN_FLIGHT at a time; every answer checked present. */
async function measure(
  node: ServeProcess,
  client: NodeClient,
  decoders: ValueDecoders,
  mode: Mode,
  store: KeptStore,
  seed: number,
  requests: number,
): Promise<Run> {
  const rand = mulberry32(seed)
  let bytes = 0
  let keys = 0
  let next = 0
  const one = async (): Promise<void> => {
    const ks = Array.from({ length: KEYS }, () => keyOf(rand() % store.records))
    // Response bytes: a 4-byte frame per key and the values as sent.
    const frames = (vs: readonly (Buffer | undefined)[]): number => vs.reduce((s, v) => s + 4 + (v?.length ?? 0), 0)
    let values: (Buffer | undefined)[]
    if (mode === 'plain') {
      values = (await client.getMany(STORE, ks)).values
      bytes += frames(values)
    } else {
      const r = await client.getManyStored(STORE, ks)
      const codec = await decoders.codecFor(r.codec!, () => client.dictionary(STORE), client.endpoint)
      bytes += frames(r.values)
      values = r.values.map((v) => (v === undefined ? undefined : codec.decode(v)))
    }
    if (values.some((v) => v === undefined)) throw new Error(`a present key read as absent (${mode})`)
    keys += ks.length
  }
  const cpu0 = process.cpuUsage()
  const server0 = node.cpuSeconds()
  const t0 = performance.now()
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next++ < requests) await one()
    }),
  )
  const seconds = (performance.now() - t0) / 1000
  const cpu = process.cpuUsage(cpu0)
  return { keys, seconds, serverCpu: node.cpuSeconds() - server0, clientCpu: (cpu.user + cpu.system) / 1e6, bytes }
}

export const compressionHttpRows: CompressionExtra = async (ctx: BenchContext, stores) => {
  const s = stores.zstdDict
  const root = ensureDir(join(workRoot(), 'compression-http'))
  const dataDir = join(root, 'data')
  rmSync(dataDir, { recursive: true, force: true })
  ensureDir(join(dataDir, STORE))
  let node: ServeProcess | undefined
  const client = (port: number): NodeClient => new NodeClient({ id: 0, host: '127.0.0.1', port, partitions: [0] }, { timeoutMs: 60_000 })
  const runs = new Map<Mode, Run[]>([
    ['plain', []],
    ['stored', []],
  ])
  try {
    await stageNodeDir(s.dir, join(dataDir, STORE, 'version-1'), { link: true }, 0)
    writeFileSync(join(dataDir, STORE, 'LIVE'), '1\n')
    node = await ServeProcess.start(dataDir, benchCluster(root), { workers: 1 })
    const c = client(node.port)
    const decoders = new ValueDecoders()
    try {
      const first = await c.getMany(STORE, [keyOf(0), keyOf(1)])
      if (!first.values[0]?.equals(s.value(0)) || !first.values[1]?.equals(s.value(1))) throw new Error('wrong value over HTTP')
      // Warm-up: the node maps its files as reads touch them; both modes read the same pages.
      await measure(node, c, decoders, 'stored', s, ctx.seed, Math.ceil(s.records / KEYS))
      const requests = ctx.quick ? 500 : 3000
      for (let i = 0; i < ctx.runs; i++)
        for (const mode of ['plain', 'stored'] as const)
          runs.get(mode)?.push(await measure(node, c, decoders, mode, s, ctx.seed + i, requests))
    } finally {
      c.close()
    }
  } catch (err) {
    return { markdown: `HTTP stored-value rows not run: ${(err as Error).message.split('\n')[0]?.slice(0, 300) ?? ''}.`, goals: [] }
  } finally {
    await node?.stop()
    rmSync(dataDir, { recursive: true, force: true })
  }
  const med = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number
  const stat = (mode: Mode) => {
    const rs = runs.get(mode) as Run[]
    return {
      keysPerSec: med(rs.map((r) => r.keys / r.seconds)),
      serverUs: med(rs.map((r) => (r.serverCpu / r.keys) * 1e6)),
      clientUs: med(rs.map((r) => (r.clientCpu / r.keys) * 1e6)),
      bytes: med(rs.map((r) => r.bytes / r.keys)),
    }
  }
  const [p, st] = [stat('plain'), stat('stored')]
  const rowOf = (label: string, x: ReturnType<typeof stat>): string[] => [
    label,
    fmt(x.keysPerSec, 0),
    fmt(x.serverUs, 2),
    fmt(x.clientUs, 2),
    fmt(x.bytes, 0),
  ]
  return {
    markdown: [
      `#### HTTP multi-get, values plain or stored (realistic values, zstd + dictionary)`,
      '',
      mdTable(
        ['values', 'keys/s', 'server CPU µs/key', 'client CPU µs/key', 'response B/key'],
        [rowOf('plain (the node decompresses)', p), rowOf('stored (`?values=stored`, the client decompresses)', st)],
      ),
      '',
      `One node (\`rostore serve --workers 1\`, pinned to core 0) serving the zstd + dictionary build; multi-gets of ${KEYS} uniform present keys, ${IN_FLIGHT} in flight, from the bench process (\`NodeClient.getMany\`, or \`getManyStored\` and the version's dictionary as \`StoreClient\` with \`decompress: 'client'\` uses it); every key of the store read once first; median of ${ctx.runs} interleaved run(s). Stored ÷ plain: server CPU ${(st.serverUs / p.serverUs).toFixed(2)}×, response bytes ${(st.bytes / p.bytes).toFixed(2)}×, client CPU ${(st.clientUs / p.clientUs).toFixed(2)}×.`,
    ].join('\n'),
    goals: [],
  }
}
