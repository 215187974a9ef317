import { statSync } from 'node:fs'
import { forEachTsvRecord } from '../kit/data'

export interface SortedRecords {
  readonly keys: string[]
  /** Record indexes in key order. */
  readonly order: Uint32Array
  /** The value of record i (a view into one of the arenas holding the values). */
  value(i: number): Buffer
}

/** Values are copied into arenas of this size (a Buffer cannot exceed 4 GiB in Node 20). */
const ARENA_BYTES = 1 << 30

/**
 * All records of a TSV in memory plus their key order: the "sorted first" bulk loads of
 * the B-tree peers. Values are copied into large arenas (no per-record Buffer to collect).
 * Keys never contain NUL, so sorting "key\0index" strings with the engine's native string
 * sort (no comparator callback) orders by key bytes.
 */
export function readSorted(tsv: string): SortedRecords {
  const arenas: Buffer[] = [Buffer.allocUnsafe(Math.min(ARENA_BYTES, statSync(tsv).size))]
  const keys: string[] = []
  const where: number[] = [] // arena index, start, length per record
  let arena = arenas[0] as Buffer
  let at = 0
  forEachTsvRecord(tsv, (k, v) => {
    if (at + v.length > arena.length) {
      arena = Buffer.allocUnsafe(Math.max(ARENA_BYTES, v.length))
      arenas.push(arena)
      at = 0
    }
    keys.push(k)
    where.push(arenas.length - 1, at, v.length)
    at += v.copy(arena, at)
  })
  const tags = keys.map((k, i) => `${k}\0${i}`)
  tags.sort()
  const order = new Uint32Array(tags.length)
  for (let j = 0; j < tags.length; j++) {
    const t = tags[j] as string
    order[j] = Number(t.slice(t.lastIndexOf('\0') + 1))
  }
  return {
    keys,
    order,
    value: (i) => {
      const start = where[3 * i + 1] as number
      return (arenas[where[3 * i] as number] as Buffer).subarray(start, start + (where[3 * i + 2] as number))
    },
  }
}
