/**
 * Peer: SQLite through the npm package `better-sqlite3@12`, a devDependency.
 *
 * Bulk load: `CREATE TABLE kv (k TEXT PRIMARY KEY, v BLOB) WITHOUT ROWID`, one prepared
 * INSERT per record inside one transaction, with the settings of a bulk load:
 * page_size=16384, journal_mode=OFF, synchronous=OFF, locking_mode=EXCLUSIVE and a 2 GiB
 * page cache; the file is fsynced once at the end (rostore's build fsyncs its output too). Like LMDB,
 * measured in the input's order and "sorted first" (records sorted in memory, then
 * inserted in key order, which only ever appends to the B-tree); the faster counts.
 *
 * page_size 16384 rather than the default 4096: a WITHOUT ROWID row must fit in about a
 * quarter of a page to stay on its leaf, so with 4 KiB pages every row of the 1024-byte
 * shape spills to an overflow page (4.7 KB per record, a 4× slower load, 2.6× slower gets;
 * measured while writing this). 16 KiB pages are as good or better for both shapes.
 *
 * Lookups: a prepared `SELECT v FROM kv WHERE k = ?` with `.pluck()`, returning a Buffer.
 */
import { closeSync, existsSync, fsyncSync, openSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { forEachTsvRecord } from '../kit/data'
import type { Getter } from './getter'
import { readSorted } from './sorted'

type SqliteCtor = typeof import('better-sqlite3')

export function sqliteModule(): SqliteCtor | string {
  try {
    return require('better-sqlite3') as SqliteCtor
  } catch (err) {
    return `npm package better-sqlite3 cannot be loaded (${(err as Error).message.split('\n')[0]}); it is a devDependency: run npm install`
  }
}

export function sqliteFile(outDir: string): string {
  return join(outDir, 'kv.sqlite')
}

export function loadSqlite(tsv: string, outDir: string, sorted: boolean): number {
  const Database = sqliteModule()
  if (typeof Database === 'string') throw new Error(Database)
  const path = sqliteFile(outDir)
  if (existsSync(path)) rmSync(path)
  const db = new Database(path)
  let count: number
  try {
    db.pragma('page_size = 16384')
    db.pragma('journal_mode = OFF')
    db.pragma('synchronous = OFF')
    db.pragma('locking_mode = EXCLUSIVE')
    db.pragma('cache_size = -2097152')
    db.pragma('temp_store = MEMORY')
    db.exec('CREATE TABLE kv (k TEXT PRIMARY KEY, v BLOB) WITHOUT ROWID')
    const insert = db.prepare('INSERT INTO kv (k, v) VALUES (?, ?)')
    db.exec('BEGIN')
    if (!sorted) {
      count = forEachTsvRecord(tsv, (k, v) => void insert.run(k, v))
    } else {
      const { keys, order, value } = readSorted(tsv)
      for (const i of order) insert.run(keys[i] as string, value(i))
      count = keys.length
    }
    db.exec('COMMIT')
  } finally {
    db.close()
  }
  const fd = openSync(path, 'r+')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  return count
}

export function openSqliteGetter(outDir: string): Getter {
  const Database = sqliteModule()
  if (typeof Database === 'string') throw new Error(Database)
  const db = new Database(sqliteFile(outDir), { readonly: true })
  db.pragma('cache_size = -2097152')
  const select = db.prepare<[string], Buffer>('SELECT v FROM kv WHERE k = ?').pluck()
  return {
    get: (key: string) => select.get(key),
    close: () => db.close(),
  }
}
