/**
 * Part of measurement 2: the per-lookup building blocks, measured in a child process of
 * their own so that the choices in the reader can be checked on any machine:
 *
 * - CRC-32 of one record (12-byte key + 100 or 1024-byte value): zlib's crc32 (a call
 *   into Node's zlib), the JavaScript tables (common/crc32.ts, slicing by 8) and the
 *   addon (native/hash/crc32.c: carry-less multiply from 64 bytes, tables below);
 * - MD5 of one 12-byte key: hash-wasm's reusable hasher, common/md5.ts, the addon;
 * - batches of 100 keys, as a multi-get handler answers them: get() per key then
 *   encodeValues, getMany then encodeValues, and getManyFramed straight into one buffer.
 *
 * ns per call = median over rounds of 1,000 calls; the variants run interleaved, round by
 * round, so load on the machine hits them alike.
 */
import { crc32 as zlibCrc32 } from 'node:zlib'
import { createMD5 } from 'hash-wasm'
import { crc32 as jsCrc32 } from '../../common/crc32'
import { md5 as jsMd5 } from '../../common/md5'
import { nativeFunctions } from '../../common/native'
import { encodeValues } from '../../formats/wire/multiget'
import { openServingStore } from '../../formats/store/read/store-reader'
import type { ValueFraming } from '../../formats/store/read/store-reader-api'
import { keyOf, uniformIds } from '../kit/data'
import { fmt, mdTable, median } from '../kit/stats'

export interface MicroResult {
  /** ns per call by variant; absent variants (no addon) are missing. */
  readonly crc: Record<string, Record<string, number>>
  readonly md5: Record<string, number>
}

export interface BatchResult {
  /** keys/s by access mode and method. */
  readonly keysPerSec: Record<string, Record<string, number>>
}

const MULTIGET: ValueFraming = {
  prefix: new Uint8Array(0),
  length: 'u32be',
  absent: Buffer.from([255, 255, 255, 255]),
  suffix: new Uint8Array(0),
}

/** Median ns per call of each variant; `calls` calls per round, rounds interleaved. */
function interleaved(variants: Record<string, () => void>, calls: number, rounds: number): Record<string, number> {
  const times: Record<string, number[]> = {}
  for (let r = 0; r < rounds; r++) {
    for (const [name, run] of Object.entries(variants)) {
      const t0 = process.hrtime.bigint()
      run()
      const ns = Number(process.hrtime.bigint() - t0) / calls
      if (r >= rounds / 10) (times[name] ??= []).push(ns)
    }
  }
  return Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)]))
}

export async function runMicro(quick: boolean): Promise<MicroResult> {
  const native = nativeFunctions()
  const rounds = quick ? 60 : 400
  const crc: Record<string, Record<string, number>> = {}
  for (const size of [112, 1036]) {
    const rec = Buffer.alloc(size, 0x5a)
    const variants: Record<string, () => void> = {
      zlib: () => {
        for (let i = 0; i < 1000; i++) zlibCrc32(rec)
      },
      'JS tables': () => {
        for (let i = 0; i < 1000; i++) jsCrc32(rec, 0)
      },
    }
    if (native)
      variants['addon'] = () => {
        for (let i = 0; i < 1000; i++) native.crc32(rec, 0)
      }
    crc[`${size} B`] = interleaved(variants, 1000, rounds)
  }
  const keys = Array.from({ length: 1000 }, (_, i) => Buffer.from(keyOf(i * 7919)))
  const wasm = await createMD5()
  const out = new Uint8Array(16)
  const md5Variants: Record<string, () => void> = {
    'hash-wasm': () => {
      for (const k of keys) {
        wasm.init()
        wasm.update(k)
        wasm.digest('binary')
      }
    },
    'common/md5.ts': () => {
      for (const k of keys) jsMd5(k, out)
    },
  }
  if (native)
    md5Variants['addon'] = () => {
      for (const k of keys) native.md5(k, out)
    }
  return { crc, md5: interleaved(md5Variants, 1000, rounds) }
}

export async function runBatch(dir: string, records: number, seed: number, quick: boolean): Promise<BatchResult> {
  const ids = uniformIds(records, quick ? 20_000 : 200_000, seed)
  const batches: Buffer[][] = []
  for (let at = 0; at + 100 <= ids.length; at += 100) {
    batches.push(Array.from(ids.subarray(at, at + 100), (id) => Buffer.from(keyOf(id))))
  }
  const keysPerSec: Record<string, Record<string, number>> = {}
  for (const access of nativeFunctions() ? (['mmap', 'pread'] as const) : (['pread'] as const)) {
    const r = await openServingStore(dir, { access })
    try {
      const methods: Record<string, (b: Buffer[]) => Buffer> = {
        'get() per key + encodeValues': (b) => encodeValues(b.map((k) => r.get(k))),
        'getMany + encodeValues': (b) => encodeValues(r.getMany(b)),
        getManyFramed: (b) => r.getManyFramed(b, MULTIGET),
      }
      for (const b of batches.slice(0, 50)) for (const m of Object.values(methods)) m(b)
      const ns = interleaved(
        Object.fromEntries(
          Object.entries(methods).map(([name, m]) => [
            name,
            () => {
              for (const b of batches) m(b)
            },
          ]),
        ),
        batches.length * 100,
        quick ? 3 : 8,
      )
      keysPerSec[access] = Object.fromEntries(Object.entries(ns).map(([k, v]) => [k, 1e9 / v]))
    } finally {
      r.close()
    }
  }
  return { keysPerSec }
}

export function microMarkdown(m: MicroResult | string, b: BatchResult | string): string {
  const parts: string[] = []
  if (typeof m === 'string') parts.push(`CRC and MD5 micro-measurements: not run: ${m}`)
  else {
    const crcRows = Object.entries(m.crc).map(([size, v]) => [
      `CRC-32 of a ${size} record`,
      ...['zlib', 'JS tables', 'addon'].map((k) => (v[k] === undefined ? 'n/a' : fmt(v[k] as number))),
    ])
    parts.push(
      `Building blocks of a lookup, ns per call from JavaScript (median of interleaved rounds of 1,000 calls; a record = 12-byte key + value). ` +
        `Inside the addon's lookup the CRC and the MD5 run without the call overhead. The pread reader takes, per size, the faster of the ` +
        `JavaScript columns (MD5: common/md5.ts below 128-byte keys; CRC: JS tables up to 256-byte records, zlib above).\n\n` +
        mdTable(
          ['operation', 'zlib / hash-wasm', 'JavaScript', 'addon'],
          [
            ...crcRows,
            [
              'MD5 of a 12-byte key',
              ...['hash-wasm', 'common/md5.ts', 'addon'].map((k) => (m.md5[k] === undefined ? 'n/a' : fmt(m.md5[k] as number))),
            ],
          ],
        ),
    )
  }
  if (typeof b === 'string') parts.push(`Batches of 100 keys: not run: ${b}`)
  else {
    const methods = Object.keys(Object.values(b.keysPerSec)[0] ?? {})
    parts.push(
      `Batches of 100 uniform keys (the work of one multi-get request without the network), keys/s, interleaved rounds:\n\n` +
        mdTable(
          ['access', ...methods],
          Object.entries(b.keysPerSec).map(([access, v]) => [access, ...methods.map((k) => fmt(v[k] as number))]),
        ),
    )
  }
  return parts.join('\n\n')
}
