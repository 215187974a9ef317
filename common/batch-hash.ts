import { crc32Batch } from './crc32'
import { md5Batch } from './md5'
import { nativeFunctions } from './native'

/**
 * MD5 and CRC-32 over many byte ranges of one buffer per call, for the builder: the
 * native addon's batch functions when it loads, else their JavaScript twins (same
 * signatures, same results; `ROSTORE_NATIVE=0` forces the twins). Both build the same
 * bytes; test/unit/common/batch-hash.test.ts runs one suite over each.
 */
export interface BatchHashFunctions {
  readonly mode: 'native' | 'js'
  md5Batch(src: Uint8Array, starts: Uint32Array, ends: Uint32Array, count: number, out: Uint8Array): void
  crc32Batch(src: Uint8Array, starts: Uint32Array, ends: Uint32Array, count: number, out: Uint32Array): void
}

export const JS_BATCH_HASHES: BatchHashFunctions = { mode: 'js', md5Batch, crc32Batch }

let chosen: BatchHashFunctions | undefined

export function batchHashes(): BatchHashFunctions {
  if (chosen) return chosen
  const n = nativeFunctions()
  chosen = n ? { mode: 'native', md5Batch: n.md5Batch, crc32Batch: n.crc32Batch } : JS_BATCH_HASHES
  return chosen
}
