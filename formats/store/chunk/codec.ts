import { gunzipSync, gzipSync, constants } from 'node:zlib'
import { compressSync, uncompressSync } from 'snappy'
import type { Compression } from '../layout/metadata'

/**
 * Value codecs, applied per value so a lookup decompresses only what it returns.
 * gzip (node:zlib) compresses better; snappy is the fast codec. Codec ids are written in
 * every data file header and never renumbered.
 */
export interface ValueCodec {
  readonly name: Compression
  readonly id: number
  encode(value: Uint8Array): Buffer
  decode(stored: Uint8Array): Buffer
}

const asBuffer = (v: Uint8Array): Buffer => (Buffer.isBuffer(v) ? v : Buffer.from(v.buffer, v.byteOffset, v.byteLength))

const none: ValueCodec = { name: 'none', id: 0, encode: asBuffer, decode: asBuffer }

const gzip: ValueCodec = {
  name: 'gzip',
  id: 1,
  encode: (v) => gzipSync(v, { level: constants.Z_DEFAULT_COMPRESSION }),
  decode: (s) => gunzipSync(s),
}

const snappy: ValueCodec = {
  name: 'snappy',
  id: 2,
  encode: (v) => compressSync(asBuffer(v)),
  decode: (s) => uncompressSync(asBuffer(s), { asBuffer: true }) as Buffer,
}

const CODECS: readonly ValueCodec[] = [none, gzip, snappy]

export function codecByName(name: Compression): ValueCodec {
  const c = CODECS.find((x) => x.name === name)
  if (!c) throw new RangeError(`unknown compression ${String(name)}`)
  return c
}

export function codecById(id: number): ValueCodec | undefined {
  return CODECS.find((x) => x.id === id)
}
