/**
 * Part of measurement 2: the first second after opening a cold store, per preload mode.
 * One child process per row: the store's files are dropped from the page cache
 * (posix_fadvise DONTNEED through the addon: no root needed, works because no process
 * has them mapped), the store is opened with the row's preload, and uniform lookups run
 * for one second after the reader is handed out, each one timed.
 */
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { nativeFunctions } from '../../common/native'
import { openStore } from '../../formats/store/read/store-reader'
import type { AccessMode, Preload } from '../../formats/store/read/store-reader-api'
import { keyOf, uniformIds } from '../kit/data'
import { fmt, mdTable, percentileSorted } from '../kit/stats'

export interface ColdOpenJob {
  readonly dir: string
  readonly access: AccessMode
  readonly preload: Preload
  /** false: the files are left in the page cache (the warm reference row). */
  readonly cold: boolean
  readonly records: number
  readonly seed: number
}

export interface ColdOpenResult {
  readonly job: ColdOpenJob
  readonly dropped: number
  readonly openMs: number
  readonly lookups: number
  readonly p50us: number
  readonly p99us: number
  readonly p999us: number
  readonly maxUs: number
}

/** The rows of the table, in order. */
export const COLD_ROWS: readonly Omit<ColdOpenJob, 'dir' | 'records' | 'seed'>[] = [
  { access: 'mmap', preload: 'none', cold: true },
  { access: 'mmap', preload: 'index', cold: true },
  { access: 'mmap', preload: 'all', cold: true },
  { access: 'pread', preload: 'index', cold: true },
  { access: 'pread', preload: 'all', cold: true },
  { access: 'mmap', preload: 'index', cold: false },
]

export async function runColdOpen(job: ColdOpenJob): Promise<ColdOpenResult> {
  const native = nativeFunctions()
  if (!native) throw new Error('dropping files from the page cache needs the native addon')
  let dropped = 0
  if (job.cold) for (const f of readdirSync(job.dir)) if (native.dropCache(join(job.dir, f))) dropped++
  const ids = uniformIds(job.records, 4_000_000, job.seed + 1)
  const keys = Array.from(ids.subarray(0, 50_000), keyOf)
  const t0 = performance.now()
  const r = await openStore(job.dir, { access: job.access, preload: job.preload, verifyIndex: job.preload !== 'none' })
  const opened = performance.now()
  const lat = new Float64Array(4_000_000)
  let n = 0
  while (n < lat.length) {
    const key = keys[n % keys.length] as string
    const s = performance.now()
    r.get(key)
    const e = performance.now()
    lat[n++] = (e - s) * 1000
    if (e - opened >= 1000) break
  }
  r.close()
  const sorted = lat.subarray(0, n).sort()
  return {
    job,
    dropped,
    openMs: opened - t0,
    lookups: n,
    p50us: percentileSorted(sorted, 50),
    p99us: percentileSorted(sorted, 99),
    p999us: percentileSorted(sorted, 99.9),
    maxUs: sorted[n - 1] ?? NaN,
  }
}

export function coldOpenMarkdown(
  store: string,
  results: readonly (ColdOpenResult | { job: Omit<ColdOpenJob, 'dir' | 'records' | 'seed'>; error: string })[],
): string {
  const rows = results.map((r) => {
    const label = `${r.job.access}, preload ${r.job.preload}${r.job.cold ? '' : ' (warm: files left in the page cache)'}`
    if ('error' in r) return [label, `not run: ${r.error}`, '', '', '', '', '']
    return [label, fmt(r.openMs), fmt(r.lookups), fmt(r.p50us), fmt(r.p99us), fmt(r.p999us), fmt(r.maxUs)]
  })
  return (
    `First second after opening a cold store (${store}, one chunk): files dropped from the page cache, then opened with each preload ` +
    `(preload none opens without verifyIndex, so nothing O(records) runs); then uniform lookups (10% absent) for one second ` +
    `after the reader is handed out, each timed. Open = time until the reader is handed out.\n\n` +
    mdTable(['access, preload', 'open ms', 'lookups in the first second', 'p50 µs', 'p99 µs', 'p99.9 µs', 'max µs'], rows)
  )
}
