import type { RespProto } from '../../formats/wire/resp'
import type { RespWriter } from '../../formats/wire/resp-writer'
import type { StoreReader } from '../../formats/store/store-reader-api'

/** Bytes of an MGET reply of these values, headers included. */
export function mgetReplyBytes(values: readonly (Uint8Array | undefined)[]): number {
  let n = 16
  for (const v of values) n += v === undefined ? 5 : v.length + 16
  return n
}

/** `*N` then one bulk string (or null) per value, in order. */
export function writeValues(out: RespWriter, values: readonly (Uint8Array | undefined)[], proto: RespProto): void {
  out.array(values.length)
  for (const v of values) {
    if (v === undefined) out.nil(proto)
    else out.bulk(v)
  }
}

/**
 * The MGET reply of keys that are all answered by one local reader: the one place where
 * a batch of lookups turns into reply bytes. Today it is `getMany` then `writeValues`; a
 * reader that can write framed values straight into the output buffer (the native
 * reader's batch lookup) replaces the body of this function and nothing else.
 *
 * Returns the number of keys found, or -1 (nothing written) when the reply would be
 * larger than `maxBytes`. Lookups that fail throw before anything is written.
 */
export function writeLocalMget(
  out: RespWriter,
  reader: StoreReader,
  keys: readonly Uint8Array[],
  proto: RespProto,
  maxBytes: number,
): number {
  const values = reader.getMany(keys)
  if (mgetReplyBytes(values) > maxBytes) return -1
  writeValues(out, values, proto)
  let hits = 0
  for (const v of values) if (v !== undefined) hits++
  return hits
}
