import { existsSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { mulberry32 } from '../../common/prng'
import { ensureDir, forEachTsvRecord, keyOf } from '../kit/data'
import { lmdbFile, lmdbModule } from '../peers/lmdb'

/**
 * The LMDB rows of 2c: the realistic records loaded into lmdb-js without and with its own
 * compression (LZ4 with its built-in shared dictionary, compressed on its write thread),
 * store size = data.mdb, and its synchronous gets on the same random keys as rostore's.
 */
export interface LmdbVariant {
  readonly id: string
  readonly label: string
  /** lmdb-js's `compression` option: false, true (its defaults), or settings. */
  readonly compression: boolean | { readonly threshold: number }
}

export const LMDB_VARIANTS: readonly LmdbVariant[] = [
  { id: 'lmdb', label: 'LMDB (lmdb-js, no compression)', compression: false },
  { id: 'lmdb-lz4', label: 'LMDB (lmdb-js compression, defaults: values > 1000 B)', compression: true },
  { id: 'lmdb-lz4-100', label: 'LMDB (lmdb-js compression, threshold 100 B: every value)', compression: { threshold: 100 } },
]

export interface LmdbMeasured {
  readonly bytes: number
  readonly loadSeconds: number
  readonly getsPerSec: number
}

/**
 * Loads `tsv` (keys in sorted order) with asynchronous puts, which is where lmdb-js
 * compresses, then reads `count` uniformly drawn keys; `check` validates the first values.
 */
export async function measureLmdb(
  tsv: string,
  dir: string,
  v: LmdbVariant,
  records: number,
  seed: number,
  check: (i: number) => Buffer,
): Promise<LmdbMeasured | string> {
  const lmdb = lmdbModule()
  if (typeof lmdb === 'string') return lmdb
  const out = ensureDir(join(dir, `lmdb-${v.id}`))
  const path = lmdbFile(out)
  for (const f of [path, `${path}-lock`]) if (existsSync(f)) rmSync(f)
  const options = { path, noSubdir: true, encoding: 'binary', compression: v.compression, cache: false, useVersions: false } as const
  const t0 = performance.now()
  const db = lmdb.open<Buffer, string>(options as Parameters<typeof lmdb.open>[0])
  try {
    let last: Promise<boolean> | undefined
    // The value is copied: put() keeps it until its batch is written, and `val` is a view
    // into a reused read buffer.
    forEachTsvRecord(tsv, (k, val) => {
      last = db.put(k, Buffer.from(val))
    })
    await last
    await db.flushed
  } finally {
    await db.close()
  }
  const loadSeconds = (performance.now() - t0) / 1000
  const bytes = statSync(path).size
  const ro = lmdb.open<Buffer, string>({ ...options, readOnly: true } as Parameters<typeof lmdb.open>[0])
  try {
    for (let i = 0; i < 1000 && i < records; i++) {
      if (!ro.get(keyOf(i))?.equals(check(i))) throw new Error(`${v.id}: wrong value for ${keyOf(i)}`)
    }
    const count = Math.min(records, 500_000)
    const rand = mulberry32(seed)
    const keys = Array.from({ length: count }, () => keyOf(rand() % records))
    // One pass to bring the file into the page cache, as rostore's `preload: all`.
    for (const k of keys) ro.get(k)
    let found = 0
    const t1 = performance.now()
    for (const k of keys) if (ro.get(k) !== undefined) found++
    const getsPerSec = count / ((performance.now() - t1) / 1000)
    if (found !== count) throw new Error(`${v.id}: ${count - found} keys not found`)
    return { bytes, loadSeconds, getsPerSec }
  } finally {
    await ro.close()
    rmSync(out, { recursive: true, force: true })
  }
}
