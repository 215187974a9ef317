import { execFileSync } from 'node:child_process'
import { createWriteStream, existsSync, renameSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { once } from 'node:events'
import { buildStore } from '../../builder/engines/local/build-job'
import { parseCluster } from '../../cluster/cluster'
import { nativeFunctions } from '../../common/native'
import { mulberry32 } from '../../common/prng'
import { readManifest } from '../../formats/store/layout/manifest-io'
import type { Compression } from '../../formats/store/layout/metadata'
import { openStore } from '../../formats/store/read/store-reader'
import { realisticValues } from '../../testkit/stores/realistic-values'
import { ensureDir, keyOf, label, valueOf, workRoot } from '../kit/data'
import { errorText, goal, notRunSection, type BenchContext, type GoalRow, type Section } from '../kit/report'
import { LMDB_VARIANTS, measureLmdb } from './compression-lmdb'
import { fmt, fmtRatio, mdTable, median } from '../kit/stats'

/**
 * Value compression: store size, build time and in-process gets of each codec, on values
 * shaped like a recommendation store's (testkit/stores/realistic-values.ts) and on the suite's
 * uniform random 100-byte values, built and read in this process, one after the other;
 * lmdb-js's own compression on the realistic values; and the extras run.ts hands in (RESP
 * and cold rows, which live in the folders allowed to start nodes and cgroups) on the kept
 * uncompressed and zstd + dictionary builds of the realistic values.
 */
export const COMPRESSION_TITLE = '2c. Value compression (zstd with a trained dictionary)'

interface Variant {
  readonly id: string
  readonly label: string
  readonly compression: Compression
  readonly dictionary?: boolean
}

const VARIANTS: readonly Variant[] = [
  { id: 'none', label: 'uncompressed', compression: 'none' },
  { id: 'zstd-dict', label: 'zstd + dictionary', compression: 'zstd', dictionary: true },
  { id: 'zstd', label: 'zstd, no dictionary', compression: 'zstd', dictionary: false },
  { id: 'gzip', label: 'gzip', compression: 'gzip' },
  { id: 'snappy', label: 'snappy', compression: 'snappy' },
]

/** A realistic-values build kept for the extras: its directory (a reader or a node opens it). */
export interface KeptStore {
  readonly id: string
  readonly label: string
  readonly dir: string
  /** Chunk files + dictionary. */
  readonly bytes: number
  readonly records: number
  /** The value of record i (first records only: the generator is sequential). */
  readonly value: (i: number) => Buffer
}

export type CompressionExtra = (
  ctx: BenchContext,
  stores: { readonly none: KeptStore; readonly zstdDict: KeptStore },
) => Promise<{ readonly markdown: string; readonly goals: readonly GoalRow[] }>

interface Measured {
  readonly bytes: number
  readonly buildSeconds: number
  readonly getsPerSec: number
}

async function writeTsv(path: string, n: number, value: (i: number) => Buffer): Promise<void> {
  if (existsSync(path)) return
  const out = createWriteStream(`${path}.tmp`)
  for (let i = 0; i < n; i++) {
    if (!out.write(Buffer.concat([Buffer.from(`${keyOf(i)}\t`), value(i), Buffer.from('\n')]))) await once(out, 'drain')
  }
  out.end()
  await once(out, 'finish')
  renameSync(`${path}.tmp`, path)
}

/** One build of variant `v` and its gets; `keep`: move the build there instead of removing it. */
async function measureRun(
  ctx: BenchContext,
  input: string,
  dir: string,
  v: Variant,
  check: (i: number) => Buffer,
  run: number,
  keep?: string,
): Promise<Measured> {
  const cluster = parseCluster({ name: 'bench', nodes: [{ id: 0, host: '127.0.0.1', port: 6999, partitions: [0] }] })
  const out = join(dir, `out-${v.id}`)
  rmSync(out, { recursive: true, force: true })
  // Every build starts with no dirty pages from the one before: the kernel's writeback of
  // those throttled the next build's writes, by up to a second on the larger uncompressed one.
  execFileSync('sync')
  const t0 = performance.now()
  await buildStore({
    inputs: [input],
    format: 'tsv',
    cluster,
    store: 'bench',
    output: out,
    version: 1,
    workers: 2,
    memoryMb: 1024,
    tmpdir: ensureDir(join(workRoot(), 'tmp')),
    compression: v.compression,
    ...(v.dictionary === undefined ? {} : { dictionary: v.dictionary }),
  })
  const buildSeconds = (performance.now() - t0) / 1000
  const m = await readManifest(out)
  const bytes = m.partitionFiles.flatMap((p) => p.files).reduce((s, f) => s + f.size, 0) + (m.dictionary?.size ?? 0)
  const reader = await openStore(out, { access: 'mmap', preload: 'all' })
  let getsPerSec: number
  try {
    for (let i = 0; i < 1000 && i < ctx.records; i++) {
      if (!reader.get(keyOf(i))?.equals(check(i))) throw new Error(`${v.id}: wrong value for ${keyOf(i)}`)
    }
    const count = Math.min(ctx.records, 500_000)
    const rand = mulberry32(ctx.seed + run)
    const keys = Array.from({ length: count }, () => keyOf(rand() % ctx.records))
    let found = 0
    const t1 = performance.now()
    for (const k of keys) if (reader.get(k) !== undefined) found++
    getsPerSec = count / ((performance.now() - t1) / 1000)
    if (found !== count) throw new Error(`${v.id}: ${count - found} keys not found`)
  } finally {
    reader.close()
  }
  if (keep !== undefined) {
    rmSync(keep, { recursive: true, force: true })
    renameSync(out, keep)
  } else rmSync(out, { recursive: true, force: true })
  return { bytes, buildSeconds, getsPerSec }
}

/**
 * Every variant measured `ctx.runs` times, the variants interleaved run by run (none, zstd,
 * ..., none, zstd, ...) so that a change of the machine's load falls on all of them; the
 * median of each.
 */
async function measureVariants(
  ctx: BenchContext,
  input: string,
  dir: string,
  check: () => (i: number) => Buffer,
  keep: (v: Variant) => string | undefined,
): Promise<Map<string, Measured>> {
  const runs = new Map<string, Measured[]>(VARIANTS.map((v) => [v.id, []]))
  for (let run = 0; run < ctx.runs; run++) {
    for (const v of VARIANTS) {
      const last = run === ctx.runs - 1
      runs.get(v.id)?.push(await measureRun(ctx, input, dir, v, check(), run, last ? keep(v) : undefined))
    }
  }
  return new Map(
    [...runs].map(([id, ms]) => [
      id,
      {
        bytes: (ms[ms.length - 1] as Measured).bytes,
        buildSeconds: median(ms.map((m) => m.buildSeconds)),
        getsPerSec: median(ms.map((m) => m.getsPerSec)),
      },
    ]),
  )
}

export async function runCompressionBench(ctx: BenchContext, extras: readonly CompressionExtra[] = []): Promise<Section> {
  if (!nativeFunctions()) return notRunSection(COMPRESSION_TITLE, 'zstd needs the native addon, which is not loaded')
  const dir = ensureDir(join(workRoot(), 'compression'))
  const realisticSeed = ctx.seed
  const realistic = (): ((i: number) => Buffer) => {
    const gen = realisticValues(realisticSeed)
    const firsts: Buffer[] = []
    return (i) => {
      while (firsts.length <= i) firsts.push(gen.next())
      return firsts[i] as Buffer
    }
  }
  const data = [
    {
      name: `realistic JSON values (100 B - 2 KiB), ${label(ctx.records)} records`,
      file: `realistic-${ctx.records}-${ctx.seed}.tsv`,
      value: realistic,
    },
    {
      name: `uniform random 100-byte values, ${label(ctx.records)} records`,
      file: `uniform-${ctx.records}-${ctx.seed}.tsv`,
      value: () => (i: number) => valueOf(i, 100, ctx.seed),
    },
  ]
  const parts: string[] = []
  const byData: Map<string, Measured>[] = []
  const kept = (id: string): string => join(dir, `kept-${id}`)
  const lmdbRows: string[][] = []
  const notes: string[] = []
  for (const [k, d] of data.entries()) {
    const input = join(dir, d.file)
    // The realistic generator is sequential: the input is written in record order, once.
    const gen = realisticValues(realisticSeed)
    await writeTsv(input, ctx.records, d.file.startsWith('realistic') ? () => gen.next() : d.value())
    const keep = (v: Variant): string | undefined => (k === 0 && (v.id === 'none' || v.id === 'zstd-dict') ? kept(v.id) : undefined)
    const results = await measureVariants(ctx, input, dir, d.value, keep)
    byData.push(results)
    const base = results.get('none') as Measured
    if (k === 0) {
      for (const lv of LMDB_VARIANTS) {
        const r = await measureLmdb(input, dir, lv, ctx.records, ctx.seed, d.value())
        if (typeof r === 'string') notes.push(`${lv.label} not run: ${r}.`)
        else
          lmdbRows.push([
            lv.label,
            fmt(r.bytes / 2 ** 20),
            fmtRatio(r.bytes, base.bytes),
            `(load ${fmt(r.loadSeconds)})`,
            '',
            Math.round(r.getsPerSec).toLocaleString('en-US'),
            fmtRatio(r.getsPerSec, base.getsPerSec),
          ])
      }
    }
    const rows = VARIANTS.map((v) => {
      const r = results.get(v.id) as Measured
      return [
        v.label,
        fmt(r.bytes / 2 ** 20),
        fmtRatio(r.bytes, base.bytes),
        fmt(r.buildSeconds),
        fmtRatio(r.buildSeconds, base.buildSeconds),
        Math.round(r.getsPerSec).toLocaleString('en-US'),
        fmtRatio(r.getsPerSec, base.getsPerSec),
      ]
    })
    parts.push(
      `### ${d.name}`,
      '',
      mdTable(
        ['codec', 'store MiB', 'size ÷ none', 'build s', 'build ÷ none', 'gets/s (mmap, one thread)', 'gets ÷ none'],
        [...rows, ...(k === 0 ? lmdbRows : [])],
      ),
      '',
    )
  }
  parts.push(
    `Each build: 2 workers, format 2, one partition, chunks by default; store size = chunk files + dictionary. Gets: ${fmt(Math.min(ctx.records, 500_000), 0)} uniformly drawn present keys after \`preload: all\`, value bytes returned (decompressed); median of ${ctx.runs} run(s), the variants interleaved run by run (none, zstd, ..., none, zstd, ...), each build after a \`sync\`. LMDB rows: the same records loaded by asynchronous puts (lmdb-js compresses on its write thread: LZ4 with its built-in shared dictionary), store size = data.mdb, gets after one pass over the keys, one run.`,
    '',
  )
  const real = byData[0] as Map<string, Measured>
  const none = real.get('none') as Measured
  const zd = real.get('zstd-dict') as Measured
  const keptStore = (id: string, label: string, m: Measured): KeptStore => ({
    id,
    label,
    dir: kept(id),
    bytes: m.bytes,
    records: ctx.records,
    value: realistic(),
  })
  const stores = { none: keptStore('none', 'uncompressed', none), zstdDict: keptStore('zstd-dict', 'zstd + dictionary', zd) }
  const extraGoals: GoalRow[] = []
  for (const extra of extras) {
    try {
      const r = await extra(ctx, stores)
      parts.push(r.markdown, '')
      extraGoals.push(...r.goals)
    } catch (err) {
      parts.push(`Rows not run: ${errorText(err)}`, '')
    }
  }
  parts.push(...notes)
  for (const id of ['none', 'zstd-dict']) rmSync(kept(id), { recursive: true, force: true })
  return {
    title: COMPRESSION_TITLE,
    markdown: parts.join('\n'),
    goals: [
      goal(
        'zstd-size',
        'Store size, zstd + dictionary, realistic values',
        '≤ 0.35× uncompressed',
        fmtRatio(zd.bytes, none.bytes),
        zd.bytes <= 0.35 * none.bytes,
      ),
      goal(
        'zstd-get',
        'In-process get, zstd + dictionary, realistic values',
        '≥ 0.5× uncompressed',
        fmtRatio(zd.getsPerSec, none.getsPerSec),
        zd.getsPerSec >= 0.5 * none.getsPerSec,
      ),
      goal(
        'zstd-build',
        'Build time, zstd + dictionary, realistic values',
        '≤ 1.3× uncompressed',
        fmtRatio(zd.buildSeconds, none.buildSeconds),
        zd.buildSeconds <= 1.3 * none.buildSeconds,
      ),
      ...extraGoals,
    ],
  }
}
