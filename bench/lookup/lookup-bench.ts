/**
 * Measurement 2 — in-process lookups on one thread: gets/s of rostore's reader (memory-
 * mapped through the addon: default, CRC off, binary search, snappy values; and the pread
 * fallback) against LMDB `get` and a SQLite primary-key SELECT, on the same keys, plus
 * rostore's mean index probes per lookup; then the building blocks, batches, cold opens
 * and reader memory (lookup-extras.ts). Each engine runs in a fresh child process pinned to one core: one
 * untimed pass checks every answer (hit/miss as generated, a sample of values byte-equal
 * to the generator's) and warms caches, then `runs` timed passes over the same stream.
 * rostore stores are built with one chunk, so at 1M records the index has 1M keys.
 */
import { ensureDataset, STREAM_KINDS, type Dataset, type StreamKind } from '../kit/data'
import type { LookupJob, LookupResult } from '../kit/child'
import { childScript } from '../build/build-bench'
import { lmdbModule } from '../peers/lmdb'
import { sqliteModule } from '../peers/sqlite'
import { goal, type BenchContext, type GoalRow, type Section } from '../kit/report'
import { artifactDir, ensureArtifact, rostoreNodeDir } from '../kit/rostore'
import { fmt, fmtRatio, fmtSpread, mdTable, summarize } from '../kit/stats'
import { log, runTimed } from '../kit/system'
import { nativeFunctions, nativeUnavailableReason } from '../../common/native'
import { readerExtras } from './lookup-extras'

interface Engine {
  readonly id: string
  readonly label: string
  readonly skip?: string
  /** Not run with --quick. */
  readonly quickSkip?: boolean
  readonly job: (stream: StreamKind) => Omit<LookupJob, 'stream' | 'records' | 'valueBytes' | 'seed' | 'count' | 'runs' | 'maxSeconds'>
}

/** Bulk-loads a peer artifact in a child process (sorted-first: the most compact file). */
export function loadPeerArtifact(ds: Dataset) {
  return async (engine: 'lmdb' | 'sqlite', outDir: string): Promise<void> => {
    await runTimed(process.execPath, ['--max-old-space-size=16384', childScript(), 'load', engine, ds.tsv, outDir, '1'], {
      timeoutMs: 4 * 3_600_000,
    })
  }
}

async function enginesFor(ds: Dataset): Promise<Engine[]> {
  const lmdb = lmdbModule()
  const sqlite = sqliteModule()
  const load = loadPeerArtifact(ds)
  const none = rostoreNodeDir(ds, 'rostore-none')
  const snappy = rostoreNodeDir(ds, 'rostore-snappy')
  await ensureArtifact(ds, 'rostore-none', load)
  await ensureArtifact(ds, 'rostore-snappy', load)
  if (typeof lmdb !== 'string') await ensureArtifact(ds, 'lmdb', load)
  if (typeof sqlite !== 'string') await ensureArtifact(ds, 'sqlite', load)
  const noAddon = nativeFunctions() ? undefined : nativeUnavailableReason()
  const ro = (over: Partial<LookupJob>) => () => ({ engine: 'rostore' as const, path: none, search: 'interpolation' as const, ...over })
  return [
    { id: 'ro-mmap', label: 'rostore mmap (default: interpolation, CRC on)', skip: noAddon, job: ro({ access: 'mmap' }) },
    { id: 'ro-mmap-nocrc', label: 'rostore mmap, CRC off', skip: noAddon, job: ro({ access: 'mmap', verifyRecords: false }) },
    {
      id: 'ro-mmap-binary',
      label: 'rostore mmap, binary search',
      skip: noAddon,
      quickSkip: true,
      job: ro({ access: 'mmap', search: 'binary' }),
    },
    { id: 'ro-mmap-snappy', label: 'rostore mmap, snappy values', skip: noAddon, job: ro({ access: 'mmap', path: snappy }) },
    { id: 'ro-pread', label: 'rostore pread fallback (interpolation, CRC on)', job: ro({ access: 'pread' }) },
    {
      id: 'lmdb',
      label: 'LMDB get',
      skip: typeof lmdb === 'string' ? lmdb : undefined,
      job: () => ({ engine: 'lmdb', path: artifactDir(ds, 'lmdb') }),
    },
    {
      id: 'sqlite',
      label: 'SQLite SELECT by primary key',
      skip: typeof sqlite === 'string' ? sqlite : undefined,
      job: () => ({ engine: 'sqlite', path: artifactDir(ds, 'sqlite') }),
    },
  ]
}

interface Cell {
  readonly result?: LookupResult
  readonly error?: string
}

async function runJobs(jobs: readonly LookupJob[]): Promise<LookupResult[]> {
  const t = await runTimed(process.execPath, [childScript(), 'lookup', JSON.stringify(jobs)], { timeoutMs: 3_600_000 })
  return JSON.parse(t.stdout.trim().split('\n').pop() ?? '[]') as LookupResult[]
}

export async function runLookupBench(ctx: BenchContext): Promise<Section> {
  const count = ctx.quick ? 50_000 : Math.min(ctx.records, 2_000_000)
  // Passes are cheap next to a process start: at least 5, bounded in time.
  const passes = ctx.quick ? 3 : Math.max(5, ctx.runs)
  const parts: string[] = [
    `Lookups per pass: ${fmt(count)} keys of each stream (uniform: 10% absent keys; zipf: s = 0.99, all present). ` +
      `Each engine runs in its own process, on one thread; an untimed pass verifies every answer, then ${passes} timed passes (fewer if they pass ${ctx.quick ? 3 : 60} s): ` +
      `median gets/s and spread (±half the range over the median) across passes. rostore stores have one chunk (all keys in one index). ` +
      `Probes = index entries compared per lookup (rostore's \`lastProbes\`).`,
  ]
  const goals: GoalRow[] = []
  for (const shape of ctx.shapes) {
    const ds = ensureDataset(shape, ctx.seed)
    log(`lookup bench: ${shape.name}`)
    const engines = await enginesFor(ds)
    const cells = new Map<string, Cell>()
    // One process per engine runs both streams: fewer process starts, same isolation between engines.
    for (const e of engines) {
      if (e.skip || (ctx.quick && e.quickSkip)) continue
      const jobs: LookupJob[] = STREAM_KINDS.map((stream) => ({
        ...e.job(stream),
        stream,
        records: shape.records,
        valueBytes: shape.valueBytes,
        seed: ctx.seed,
        count,
        runs: passes,
        maxSeconds: ctx.quick ? 3 : 60,
      }))
      try {
        const results = await runJobs(jobs)
        STREAM_KINDS.forEach((stream, k) => {
          const result = results[k]
          cells.set(`${e.id}/${stream}`, result ? { result } : { error: 'no result' })
          if (result) log(`lookup ${shape.name} ${stream} ${e.label}: ${summarize(result.getsPerSec).median.toFixed(0)} gets/s`)
        })
      } catch (err) {
        const error = (err as Error).message.split('\n').slice(0, 4).join(' / ').slice(0, 400)
        for (const stream of STREAM_KINDS) cells.set(`${e.id}/${stream}`, { error })
        log(`lookup ${shape.name} ${e.label} failed: ${error}`)
      }
    }
    const median = (id: string, stream: StreamKind): number => {
      const r = cells.get(`${id}/${stream}`)?.result
      return r ? summarize(r.getsPerSec).median : NaN
    }
    const rows: string[][] = []
    for (const e of engines) {
      const row = [e.label]
      for (const stream of STREAM_KINDS) {
        const c = cells.get(`${e.id}/${stream}`)
        if (e.skip) row.push(`not run: ${e.skip}`, '', '', '')
        else if (ctx.quick && e.quickSkip) row.push('not run in --quick', '', '', '')
        else if (!c?.result) row.push(`not run: ${c?.error ?? 'no result'}`, '', '', '')
        else {
          const s = summarize(c.result.getsPerSec)
          row.push(
            fmt(s.median),
            fmtSpread(s),
            fmtRatio(median('ro-mmap', stream), s.median),
            c.result.probes ? fmt(c.result.probes.all) : '–',
          )
        }
      }
      rows.push(row)
    }
    const header = ['engine']
    for (const stream of STREAM_KINDS) header.push(`${stream} gets/s`, 'spread', 'rostore mmap ÷ this', 'mean probes')
    parts.push(`### ${shape.name}\n\n${mdTable(header, rows)}`)
    const probes = cells.get('ro-mmap/uniform')?.result?.probes ?? cells.get('ro-pread/uniform')?.result?.probes
    const probesB = cells.get('ro-mmap-binary/uniform')?.result?.probes
    if (probes) {
      parts.push(
        `Probes per lookup, uniform stream, ${fmt(shape.records)} keys in the chunk: interpolation ${fmt(probes.all)} mean ` +
          `(hits ${fmt(probes.hits)}, misses ${fmt(probes.misses)}, max ${probes.max})` +
          (probesB ? `; binary ${fmt(probesB.all)} mean (max ${probesB.max})` : '') +
          `. Verified values: ${cells.get('ro-mmap/uniform')?.result?.verified ?? cells.get('ro-pread/uniform')?.result?.verified ?? 0} sampled hits per engine and stream, all byte-equal.`,
      )
    }
    for (const stream of STREAM_KINDS) {
      const ours = median('ro-mmap', stream)
      const lm = median('lmdb', stream)
      const beside = (id: string, what: string): string => {
        const v = median(id, stream)
        return Number.isFinite(v) && Number.isFinite(lm) ? `; ${what} ${fmtRatio(v, lm)}` : ''
      }
      goals.push(
        goal(
          'lookup-lmdb',
          `In-process get vs LMDB get, ${shape.name}, ${stream} (mmap, CRC on)`,
          '≥ 2.0× (stretch 3×)',
          Number.isFinite(lm) && Number.isFinite(ours)
            ? `${fmtRatio(ours, lm)} (${fmt(ours)} vs ${fmt(lm)} gets/s)${beside('ro-mmap-nocrc', 'CRC off')}${beside('ro-pread', 'pread fallback')}`
            : Number.isFinite(lm)
              ? `mmap not run${beside('ro-pread', 'pread fallback')}`
              : 'LMDB not run',
          Number.isFinite(lm) && Number.isFinite(ours) ? ours / lm >= 2 : undefined,
        ),
      )
    }
    if (shape === ctx.shapes[0]) {
      goals.push(
        goal(
          'probes',
          `Interpolation search mean probes, ${fmt(shape.records)} keys per chunk`,
          '≤ 3' + (shape.records < 1_000_000 ? ' (at 1M keys; this run has fewer)' : ''),
          probes ? fmt(probes.all) : 'not run',
          probes ? probes.all <= 3 : undefined,
        ),
      )
    }
  }
  parts.push(await readerExtras(ctx))
  return { title: '2. In-process lookups (one thread)', markdown: parts.join('\n\n') + '\n', goals }
}
