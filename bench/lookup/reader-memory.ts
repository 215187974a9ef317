/**
 * Part of measurement 2: what a reader costs in memory. One child process per store and
 * access mode (run with --expose-gc) samples its own JS heap and /proc/self/status
 * (RssAnon: private memory such as the heap, typed arrays and malloc; RssFile: file pages
 * mapped into the process, which the page cache holds once for every process) before
 * opening, after opening, and after reading every key once.
 *
 * Stores: (a) ~2 GB of values (2M × 1 KiB) and (b) 20M records (× 10 B), built with the
 * default chunk count; --quick uses 50k × 1 KiB and 500k × 10 B.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { openStore } from '../../formats/store/read/store-reader'
import type { AccessMode } from '../../formats/store/read/store-reader-api'
import { KEY_DIGITS, datasetId, ensureDataset, label, workRoot, writeKey, type Dataset, type Shape } from '../kit/data'
import { log } from '../kit/system'
import { rostoreBuild } from '../kit/rostore'
import { fmt, mdTable } from '../kit/stats'

export interface MemorySample {
  readonly heapMiB: number
  readonly arrayBuffersMiB: number
  readonly rssAnonMiB: number
  readonly rssFileMiB: number
}

export interface MemoryResult {
  readonly access: AccessMode
  readonly records: number
  readonly found: number
  readonly before: MemorySample
  readonly opened: MemorySample
  readonly read: MemorySample
  readonly openSecs: number
  readonly readSecs: number
}

export function memoryShapes(quick: boolean): Shape[] {
  const big = quick ? 50_000 : 2_000_000
  const many = quick ? 500_000 : 20_000_000
  return [
    { name: `${label(big)} × 1024 B`, records: big, valueBytes: 1024 },
    { name: `${label(many)} × 10 B`, records: many, valueBytes: 10 },
  ]
}

/**
 * A store of `ds` built with rostore's defaults (chunk count from the input size): the
 * directory a reader opens, the build output (format 2, the default) or a format-1 build's
 * `node-0` (artifacts built before format 2 was the default).
 */
export async function ensureDefaultBuild(ds: Dataset): Promise<string> {
  const dir = join(workRoot(), 'stores', datasetId(ds.shape, ds.seed), 'rostore-default')
  const opened = (): string => (existsSync(join(dir, 'out', 'node-0')) ? join(dir, 'out', 'node-0') : join(dir, 'out'))
  if (existsSync(join(dir, '.done'))) return opened()
  log(`preparing rostore-default for ${ds.shape.name}`)
  rmSync(dir, { recursive: true, force: true })
  const tmp = `${dir}.tmp`
  rmSync(tmp, { recursive: true, force: true })
  mkdirSync(tmp, { recursive: true })
  await rostoreBuild(ds, join(tmp, 'out'))
  writeFileSync(join(tmp, '.done'), new Date().toISOString())
  renameSync(tmp, dir)
  return opened()
}

/** Builds one store after the other: each build uses every core. */
export async function prepareMemoryStores(quick: boolean, seed: number): Promise<{ shape: Shape; dir: string }[]> {
  const out: { shape: Shape; dir: string }[] = []
  for (const shape of memoryShapes(quick)) out.push({ shape, dir: await ensureDefaultBuild(ensureDataset(shape, seed)) })
  return out
}

function sample(): MemorySample {
  ;(globalThis as { gc?: () => void }).gc?.()
  const status = readFileSync('/proc/self/status', 'utf8')
  const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN)
  const m = process.memoryUsage()
  return {
    heapMiB: m.heapUsed / 2 ** 20,
    arrayBuffersMiB: m.arrayBuffers / 2 ** 20,
    rssAnonMiB: kb('RssAnon') / 1024,
    rssFileMiB: kb('RssFile') / 1024,
  }
}

/** Child side: open `dir` with `access`, read every key 0..records-1 once. */
export async function runMemory(dir: string, access: AccessMode, records: number): Promise<MemoryResult> {
  const before = sample()
  let t0 = performance.now()
  const r = await openStore(dir, { access })
  const openSecs = (performance.now() - t0) / 1000
  const opened = sample()
  t0 = performance.now()
  let found = 0
  // Keys written into one reused buffer: the pass itself makes no garbage per key.
  const key = Buffer.alloc(KEY_DIGITS)
  for (let i = 0; i < records; i++) {
    writeKey(key, 0, i)
    if (r.get(key) !== undefined) found++
  }
  const readSecs = (performance.now() - t0) / 1000
  const read = sample()
  r.close()
  return { access, records, found, before, opened, read, openSecs, readSecs }
}

export function memoryMarkdown(results: readonly { shape: Shape; result?: MemoryResult; error?: string }[]): string {
  const rows = results.map(({ shape, result: m, error }) => {
    if (!m) return [shape.name, `not run: ${error ?? 'no result'}`, '', '', '', '', '', '']
    const f = (x: number): string => fmt(x)
    return [
      shape.name,
      m.access,
      `${f(m.before.heapMiB)} → ${f(m.opened.heapMiB)} → ${f(m.read.heapMiB)}`,
      `${f(m.before.arrayBuffersMiB)} → ${f(m.opened.arrayBuffersMiB)} → ${f(m.read.arrayBuffersMiB)}`,
      `${f(m.before.rssAnonMiB)} → ${f(m.opened.rssAnonMiB)} → ${f(m.read.rssAnonMiB)}`,
      `${f(m.before.rssFileMiB)} → ${f(m.opened.rssFileMiB)} → ${f(m.read.rssFileMiB)}`,
      `${fmt(m.openSecs)} s`,
      `${fmt(m.records / m.readSecs)} gets/s (${m.found === m.records ? 'all found' : `${m.found} of ${m.records} found`})`,
    ]
  })
  return (
    `Reader memory, MiB (before opening → after opening → after reading every key once; one process per row, samples after a forced GC). ` +
    `Heap = V8 heapUsed; array buffers = memory held by ArrayBuffers (the pread reader's index arrays; mapped files are not counted); ` +
    `RssAnon = private resident memory; RssFile = resident pages of mapped files, shared with the page cache (the mmap reader's files).\n\n` +
    mdTable(['store', 'access', 'JS heap', 'array buffers', 'RssAnon', 'RssFile', 'open', 'read pass'], rows)
  )
}
