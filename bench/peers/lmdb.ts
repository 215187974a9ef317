/**
 * Peer: LMDB through the npm package `lmdb` (lmdb-js), a devDependency.
 *
 * Bulk load, values stored as raw bytes (`encoding: 'binary'`, no compression), committed
 * durably (LMDB's default sync, waited for). Two ways are measured and the faster one is
 * LMDB's number in the ratios:
 * - input order: asynchronous `db.put` per record, which lmdb-js batches into large
 *   transactions on its write thread (its documented fast path);
 * - sorted first: all records read into memory, sorted by key, then appended in one
 *   synchronous transaction (`putSync(k, v, { append: true })`): the classic B+tree bulk
 *   load, which also leaves full pages (a smaller file).
 *
 * Lookups: `db.get(key)`, which returns a fresh Buffer like rostore's `get`.
 */
import { existsSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { forEachTsvRecord } from '../kit/data'
import type { Getter } from './getter'
import { readSorted } from './sorted'

type LmdbModule = typeof import('lmdb')

/** The module, or the reason it cannot be loaded. */
export function lmdbModule(): LmdbModule | string {
  try {
    return require('lmdb') as LmdbModule
  } catch (err) {
    return `npm package lmdb cannot be loaded (${(err as Error).message.split('\n')[0]}); it is a devDependency: run npm install`
  }
}

/** The database file of a load into `outDir`. */
export function lmdbFile(outDir: string): string {
  return join(outDir, 'data.mdb')
}

export async function loadLmdb(tsv: string, outDir: string, sorted: boolean): Promise<number> {
  const lmdb = lmdbModule()
  if (typeof lmdb === 'string') throw new Error(lmdb)
  const path = lmdbFile(outDir)
  if (existsSync(path)) rmSync(path)
  const db = lmdb.open<Buffer, string>({ path, noSubdir: true, encoding: 'binary', compression: false, cache: false, useVersions: false })
  let count: number
  try {
    if (!sorted) {
      // lmdb-js's fast path: asynchronous puts, batched into one transaction by its
      // write thread (the value is copied: put() keeps a reference until
      // the batch is written, and `v` is a view into a reused read buffer).
      let last: Promise<boolean> | undefined
      count = forEachTsvRecord(tsv, (k, v) => {
        last = db.put(k, Buffer.from(v))
      })
      await last
    } else {
      const { keys, order, value } = readSorted(tsv)
      db.transactionSync(() => {
        for (const i of order) db.putSync(keys[i] as string, value(i), { append: true })
      })
      count = keys.length
    }
    // With overlappingSync (the default on Linux) the commit's fsync completes later.
    await db.flushed
  } finally {
    await db.close()
  }
  return count
}

export function openLmdbGetter(outDir: string): Getter {
  const lmdb = lmdbModule()
  if (typeof lmdb === 'string') throw new Error(lmdb)
  const db = lmdb.open<Buffer, string>({
    path: lmdbFile(outDir),
    noSubdir: true,
    encoding: 'binary',
    compression: false,
    cache: false,
    useVersions: false,
    readOnly: true,
  })
  return {
    get: (key: string) => db.get(key),
    close: () => void db.close(),
  }
}
