import { StoreError } from '../../common/errors'
import { COMPRESSIONS, type Compression } from '../store/layout/metadata'

/**
 * Values sent as the version stores them (docs/API.md, "Compressed values"): a reader
 * asks with `?values=stored` on a single get, a multi-get or a dump stream, and the
 * answer names the codec in COMPRESSION_HEADER and, for zstd with a trained dictionary,
 * the dictionary's checksum in DICTIONARY_HEADER. The client fetches that dictionary once
 * (`GET /stores/<store>/dictionary`), checks it against the checksum and decompresses the
 * values itself: a compressed store moves its compressed bytes and the nodes skip the
 * decompression. RESP and plain HTTP reads answer decompressed values.
 */
export const COMPRESSION_HEADER = 'X-Rostore-Compression'
export const DICTIONARY_HEADER = 'X-Rostore-Dictionary'

export type ValuesMode = 'plain' | 'stored'

/** The `values` parameter of a query string (absent: 'plain'); RO_BAD_REQUEST for any other value. */
export function valuesModeOf(query: URLSearchParams): ValuesMode {
  const all = query.getAll('values')
  if (all.length === 0) return 'plain'
  const v = all[0]
  if (all.length > 1 || (v !== 'plain' && v !== 'stored')) throw new StoreError('RO_BAD_REQUEST', 'values must be plain or stored')
  return v
}

/** The response headers that describe stored values (from a reader's StoredValues, or a version's metadata). */
export function storedValuesHeaders(sv: {
  readonly compression: Compression
  readonly dictionary?: { readonly checksum: string }
}): Record<string, string> {
  return sv.dictionary === undefined
    ? { [COMPRESSION_HEADER]: sv.compression }
    : { [COMPRESSION_HEADER]: sv.compression, [DICTIONARY_HEADER]: sv.dictionary.checksum }
}

/** How a response's stored values are compressed: the codec and the dictionary's checksum, if any. */
export interface StoredCodecRef {
  readonly compression: Compression
  readonly dictionary?: string
}

/** The StoredCodecRef of a response's headers (lower-case names, as node:http gives them); RO_BAD_FORMAT when missing or malformed. */
export function storedCodecOf(headers: Readonly<Record<string, string | string[] | undefined>>, who: string): StoredCodecRef {
  const compression = headers[COMPRESSION_HEADER.toLowerCase()]
  const dictionary = headers[DICTIONARY_HEADER.toLowerCase()]
  if (typeof compression !== 'string' || !(COMPRESSIONS as readonly string[]).includes(compression))
    throw new StoreError('RO_BAD_FORMAT', `${who}: stored values without a known ${COMPRESSION_HEADER}`)
  if (dictionary === undefined) return { compression: compression as Compression }
  if (typeof dictionary !== 'string' || !/^[0-9a-f]{8,128}$/.test(dictionary) || compression !== 'zstd')
    throw new StoreError('RO_BAD_FORMAT', `${who}: a malformed ${DICTIONARY_HEADER}`)
  return { compression, dictionary }
}
