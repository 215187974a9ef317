import type { RespProto } from '../../formats/wire/resp'
import type { RespWriter } from '../../formats/wire/resp-writer'
import { FRAMED_COLD, type ServingReader, type ValueFraming } from '../../formats/store/read/store-reader-api'

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

const CRLF = Buffer.from('\r\n', 'latin1')
const ABSENT: Readonly<Record<RespProto, Buffer>> = { 2: Buffer.from('$-1\r\n', 'latin1'), 3: Buffer.from('_\r\n', 'latin1') }

/** A bulk string reply (GET), or the protocol's null: the reader's framing of one value. */
export const bulkFraming: Readonly<Record<RespProto, ValueFraming>> = {
  2: { prefix: new Uint8Array(0), length: 'resp', absent: ABSENT[2], suffix: CRLF },
  3: { prefix: new Uint8Array(0), length: 'resp', absent: ABSENT[3], suffix: CRLF },
}

/** The reader's RESP framing of an MGET reply of `count` keys: `*N`, then `$len value` or the protocol's null per key. */
export function mgetFraming(count: number, proto: RespProto): ValueFraming {
  return { prefix: Buffer.from(`*${count}\r\n`, 'latin1'), length: 'resp', absent: ABSENT[proto], suffix: CRLF }
}

/**
 * The MGET reply of keys that are all answered by one local reader: the one place where
 * a batch of lookups turns into reply bytes. The reader's batch lookup writes the whole
 * reply, framed, straight into the connection's output (getManyFramedInto: values copied
 * from the mapped files, no Buffer per value and none per reply).
 *
 * Returns the number of keys found, or -1 (nothing written) when the reply would be
 * larger than `maxBytes`, or with `ifResident` FRAMED_COLD (nothing written) when a record
 * is not in memory. Lookups that fail throw before anything is written.
 */
export function writeLocalMget(
  out: RespWriter,
  reader: ServingReader,
  keys: readonly Uint8Array[],
  proto: RespProto,
  maxBytes: number,
  ifResident = false,
): number {
  const at = out.pos
  const n = reader.getManyFramedInto(keys, mgetFraming(keys.length, proto), out, maxBytes, ifResident)
  if (n < 0) return n === FRAMED_COLD ? FRAMED_COLD : -1
  return countPresent(out.buf, keys.length, at)
}

/**
 * Values present in a framed MGET reply of `count` entries starting at `from`: walks the
 * length headers (`$-1` or `_` is absent) without reading the values.
 */
export function countPresent(framed: Uint8Array, count: number, from = 0): number {
  let at = framed.indexOf(0x0a, from) + 1
  let hits = 0
  for (let i = 0; i < count; i++) {
    if (framed[at] === 0x5f || framed[at + 1] === 0x2d) {
      at += framed[at] === 0x5f ? 3 : 5
      continue
    }
    let len = 0
    at++
    while (framed[at] !== 0x0d) len = len * 10 + (framed[at++] as number) - 0x30
    at += 2 + len + 2
    hits++
  }
  return hits
}
