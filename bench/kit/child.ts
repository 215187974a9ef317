/**
 * Child-process entry of the suite, so every engine is measured in a fresh process of its
 * own (no JIT or heap state shared between engines; peak RSS is per engine):
 *
 *   node child.js load <lmdb|sqlite> <tsv> <outDir> <sorted:0|1>
 *       bulk-load the TSV; prints {"records":N}
 *   node child.js lookup '<json LookupJob[]>'
 *       in-process lookups on one thread, the jobs one after the other (one engine, its
 *       streams); prints the LookupResult[] as JSON
 *   node child.js micro <quick:0|1>                 CRC/MD5 building blocks (lookup-micro.ts)
 *   node child.js batch <dir> <records> <seed> <quick:0|1>   100-key batches (lookup-micro.ts)
 *   node --expose-gc child.js memory <dir> <mmap|pread> <records>   reader memory (reader-memory.ts)
 *   node child.js cold '<json ColdOpenJob>'         first second after a cold open (cold-open.ts)
 */
import { keyOf, streamIds, valueOf, type StreamKind } from './data'
import { loadLmdb, openLmdbGetter } from '../peers/lmdb'
import { loadSqlite, openSqliteGetter } from '../peers/sqlite'
import type { Getter } from '../peers/getter'
import { openRostoreGetter } from './rostore'
import { runColdOpen, type ColdOpenJob } from '../lookup/cold-open'
import { runBatch, runMicro } from '../lookup/lookup-micro'
import { runMemory } from '../lookup/reader-memory'

export interface LookupJob {
  readonly engine: 'rostore' | 'lmdb' | 'sqlite'
  /** rostore: node directory; lmdb/sqlite: artifact directory. */
  readonly path: string
  readonly search?: 'interpolation' | 'binary'
  /** rostore: the reader's access mode (default: mmap when the addon loads). */
  readonly access?: 'mmap' | 'pread'
  /** rostore: per-record CRC check (default on). */
  readonly verifyRecords?: boolean
  readonly stream: StreamKind
  readonly records: number
  readonly valueBytes: number
  readonly seed: number
  /** Lookups per timed pass. */
  readonly count: number
  /** Timed passes over the stream. */
  readonly runs: number
  /** Stop adding passes after this many seconds (at least one pass runs). */
  readonly maxSeconds: number
}

export interface LookupResult {
  readonly getsPerSec: number[]
  readonly hits: number
  readonly misses: number
  /** Mean index entries compared per lookup (rostore only), all / hits / misses. */
  readonly probes?: { all: number; hits: number; misses: number; max: number }
  /** Values compared with the generator (a sample of the hits); all matched. */
  readonly verified: number
}

async function openGetter(job: LookupJob): Promise<Getter> {
  switch (job.engine) {
    case 'rostore':
      return openRostoreGetter(job.path, job.search ?? 'interpolation', { access: job.access, verifyRecords: job.verifyRecords })
    case 'lmdb':
      return openLmdbGetter(job.path)
    case 'sqlite':
      return openSqliteGetter(job.path)
  }
}

async function lookup(job: LookupJob): Promise<LookupResult> {
  const ids = streamIds(job.stream, job.records, job.count, job.seed)
  const keys = new Array<string>(ids.length)
  for (let j = 0; j < ids.length; j++) keys[j] = keyOf(ids[j] as number)
  const g = await openGetter(job)
  try {
    // Untimed pass: correctness (hit/miss as generated, sampled values byte-equal),
    // probe counts, and warming the page cache and the JIT.
    let hits = 0
    let misses = 0
    let verified = 0
    let probesHit = 0
    let probesMiss = 0
    let maxProbes = 0
    for (let j = 0; j < keys.length; j++) {
      const v = g.get(keys[j] as string)
      const id = ids[j] as number
      const present = id < job.records
      if ((v !== undefined && v !== null) !== present)
        throw new Error(`${job.engine}: key ${keys[j]} ${present ? 'missing' : 'found but absent'}`)
      const p = g.probes?.() ?? 0
      if (p > maxProbes) maxProbes = p
      if (present) {
        hits++
        probesHit += p
        if (j % 997 === 0) {
          const want = valueOf(id, job.valueBytes, job.seed)
          if (!Buffer.from((v as Uint8Array).buffer, (v as Uint8Array).byteOffset, (v as Uint8Array).byteLength).equals(want)) {
            throw new Error(`${job.engine}: wrong value for key ${keys[j]}`)
          }
          verified++
        }
      } else {
        misses++
        probesMiss += p
      }
    }
    const getsPerSec: number[] = []
    const started = performance.now()
    for (let r = 0; r < job.runs; r++) {
      if (r > 0 && (performance.now() - started) / 1000 > job.maxSeconds) break
      let found = 0
      const t0 = performance.now()
      for (let j = 0; j < keys.length; j++) if (g.get(keys[j] as string) != null) found++
      const secs = (performance.now() - t0) / 1000
      if (found !== hits) throw new Error(`${job.engine}: ${found} hits in a timed pass, ${hits} before`)
      getsPerSec.push(keys.length / secs)
    }
    return {
      getsPerSec,
      hits,
      misses,
      probes: g.probes
        ? {
            all: (probesHit + probesMiss) / keys.length,
            hits: probesHit / Math.max(1, hits),
            misses: probesMiss / Math.max(1, misses),
            max: maxProbes,
          }
        : undefined,
      verified,
    }
  } finally {
    g.close()
  }
}

async function main(): Promise<void> {
  const [task, ...rest] = process.argv.slice(2)
  if (task === 'load') {
    const [engine, tsv, outDir, sorted] = rest
    if (!tsv || !outDir) throw new Error('usage: child.js load <lmdb|sqlite> <tsv> <outDir> <0|1>')
    const records =
      engine === 'lmdb' ? await loadLmdb(tsv, outDir, sorted === '1') : engine === 'sqlite' ? loadSqlite(tsv, outDir, sorted === '1') : NaN
    if (Number.isNaN(records)) throw new Error(`unknown engine ${engine}`)
    process.stdout.write(`${JSON.stringify({ records })}\n`)
  } else if (task === 'lookup') {
    const jobs = JSON.parse(rest[0] ?? '[]') as LookupJob[]
    const results: LookupResult[] = []
    for (const job of jobs) results.push(await lookup(job))
    process.stdout.write(`${JSON.stringify(results)}\n`)
  } else if (task === 'micro') {
    process.stdout.write(`${JSON.stringify(await runMicro(rest[0] === '1'))}\n`)
  } else if (task === 'batch') {
    const [dir, records, seed, quick] = rest
    process.stdout.write(`${JSON.stringify(await runBatch(dir ?? '', Number(records), Number(seed), quick === '1'))}\n`)
  } else if (task === 'memory') {
    const [dir, access, records] = rest
    if (access !== 'mmap' && access !== 'pread') throw new Error('usage: child.js memory <dir> <mmap|pread> <records>')
    process.stdout.write(`${JSON.stringify(await runMemory(dir ?? '', access, Number(records)))}\n`)
  } else if (task === 'cold') {
    process.stdout.write(`${JSON.stringify(await runColdOpen(JSON.parse(rest[0] ?? '{}') as ColdOpenJob))}\n`)
  } else {
    throw new Error(`unknown task ${task}`)
  }
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
    process.exit(1)
  })
}
