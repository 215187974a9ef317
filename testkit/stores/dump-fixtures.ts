import { readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { Binary, makeVector, Table, tableToIPC, vectorFromArray } from 'apache-arrow'
import type { InputFormat } from '../../formats/input/types'
import { mulberry32 } from '../../common/prng'
import { sqlString, writeParquetWithDuckdb } from './duckdb'
import { writeInput } from './input-files'

/**
 * Inputs for dump round trips: text records (empty values, tabs, non-ASCII, 1 MiB values)
 * for every input format, and binary records (any bytes, empty, 1 MiB) for Parquet and
 * Arrow, whose binary columns give bytes back exactly.
 */
export function textRecords(count: number, seed = 7): [string, string][] {
  const rnd = mulberry32(seed)
  const out: [string, string][] = []
  for (let i = 0; i < count; i++) {
    const kind = i % 5
    const value = kind === 0 ? '' : kind === 1 ? `v${i} é ✓ "q"` : kind === 2 ? `v${i},comma` : `value-${i}-${Math.floor(rnd() * 1e9)}`
    out.push([`key-${i}`, value])
  }
  out.push(['big-1', 'x'.repeat(1 << 20)], ['big-2', 'ü'.repeat(1 << 19)])
  return out
}

export function binaryRecords(count: number, seed = 11): [Buffer, Buffer][] {
  const rnd = mulberry32(seed)
  const bytes = (n: number): Buffer => Buffer.from(Array.from({ length: n }, () => Math.floor(rnd() * 256)))
  const out: [Buffer, Buffer][] = []
  for (let i = 0; i < count; i++)
    out.push([Buffer.concat([Buffer.from([0xff, 0xfe, i & 0xff]), Buffer.from(`k${i}`)]), bytes(i % 4 === 0 ? 0 : 1 + (i % 300))])
  out.push([Buffer.from([0xc3, 0x28, 0x00, 0x0a]), bytes(1 << 20)])
  return out
}

/** Binary key and value columns: Arrow IPC file (Binary type) or Parquet (BLOB, plain BYTE_ARRAY). */
export async function writeBinaryInput(path: string, format: 'arrow' | 'parquet', records: readonly [Buffer, Buffer][]): Promise<void> {
  if (format === 'arrow') {
    const col = (i: 0 | 1) =>
      makeVector(
        vectorFromArray(
          records.map((r) => new Uint8Array(r[i])),
          new Binary(),
        ),
      )
    await writeFile(path, tableToIPC(new Table({ key: col(0), value: col(1) }), 'file'))
    return
  }
  const json = `${path}.input.jsonl`
  await writeFile(json, records.map(([k, v]) => JSON.stringify({ k: k.toString('base64'), v: v.toString('base64') }) + '\n').join(''))
  const source = `read_json(${sqlString(json)}, format = 'newline_delimited', columns = {'k': 'VARCHAR', 'v': 'VARCHAR'})`
  await writeParquetWithDuckdb(path, `SELECT from_base64(k) AS key, from_base64(v) AS value FROM ${source}`, { rowGroupSize: 2048 })
}

export async function writeTextInput(path: string, format: InputFormat, records: readonly [string, string][]): Promise<void> {
  await writeInput(path, format, records)
}

/** Chunk files (`<n>.index`, `<n>.data`) of every node directory of two builds that differ, by name. */
export async function differentChunkFiles(a: string, b: string): Promise<string[]> {
  const diffs: string[] = []
  for (const node of (await readdir(a)).filter((d) => d.startsWith('node-'))) {
    const files = (await readdir(join(a, node))).filter((f) => /^\d+\.(index|data)$/.test(f))
    if (files.length === 0) diffs.push(`${node}: no chunk files`)
    for (const f of files) {
      const [x, y] = await Promise.all([readFile(join(a, node, f)), readFile(join(b, node, f)).catch(() => undefined)])
      if (!y || !x.equals(y)) diffs.push(`${node}/${f}`)
    }
  }
  return diffs
}
