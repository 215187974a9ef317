import { StoreError, isStoreError } from '../common/errors'
import { codecByName, decodeAtMost, type ValueCodec } from '../formats/store/chunk/codec'
import { zstdDecoder } from '../formats/store/chunk/dictionary-file'
import type { StoredCodecRef } from '../formats/wire/stored-values'
import type { NodeClient, NodeReads } from './node-client'

const DEFAULT_MAX_VALUE_BYTES = 64 << 20

/** Dictionaries a client keeps prepared: the versions it may read at once (the live one, the one before it while a swap settles). */
const MAX_DICTIONARIES = 4

/**
 * The decoders of a client that decompresses values itself (StoreClientOptions.decompress
 * 'client'): one per codec, and per dictionary checksum for zstd with a trained
 * dictionary, whose bytes are fetched once from a node that named the checksum and
 * checked against it (NodeClient.dictionary).
 */
export class ValueDecoders {
  private readonly dictionaries = new Map<string, Promise<ValueCodec>>()
  /** Plain zstd's decoder: made once, not per read (it prepares a native context). */
  private plainZstd: ValueCodec | undefined

  /** The codec for `ref`; `fetch` gets the dictionary from the node whose answer named it. */
  async codecFor(ref: StoredCodecRef, fetch: () => Promise<{ bytes: Buffer; checksum: string }>, endpoint: string): Promise<ValueCodec> {
    const checksum = ref.dictionary
    if (checksum === undefined) return ref.compression === 'zstd' ? (this.plainZstd ??= codecByName('zstd')) : codecByName(ref.compression)
    const have = this.dictionaries.get(checksum)
    if (have) return have
    const made = fetch().then(async (d) => {
      // The node swapped versions between the values and this request: the next read names
      // the new dictionary; nothing is cached under a checksum the bytes do not have.
      if (d.checksum !== checksum)
        throw new StoreError('RO_UNAVAILABLE', `${endpoint}: the store's version changed while its dictionary was fetched`)
      return zstdDecoder(d.bytes)
    })
    this.dictionaries.set(checksum, made)
    made.catch(() => {
      // A failed fetch is asked again by the next read (unless a newer attempt took its place).
      if (this.dictionaries.get(checksum) === made) this.dictionaries.delete(checksum)
    })
    while (this.dictionaries.size > MAX_DICTIONARIES) this.dictionaries.delete(this.dictionaries.keys().next().value as string)
    return made
  }
}

/**
 * The HTTP reads of one node, values taken as the version stores them (`?values=stored`)
 * and decompressed here: the node sends a compressed store's compressed bytes and spends no
 * CPU on decompression. A value that does not decompress is RO_CORRUPT, which makes the
 * routing client ask the next replica, as for a node that reports damaged files.
 */
export class DecompressingReads implements NodeReads {
  /**
   * `maxValueBytes`: the largest value decompressed (default 64 MiB, a node's default
   * --max-response-bytes: the most a plain read would have answered).
   */
  constructor(
    private readonly node: NodeClient,
    private readonly decoders: ValueDecoders,
    private readonly maxValueBytes: number = DEFAULT_MAX_VALUE_BYTES,
  ) {}

  get endpoint(): string {
    return this.node.endpoint
  }

  async get(store: string, key: Uint8Array | string): Promise<{ value: Buffer | undefined; version: number }> {
    const r = await this.node.getStored(store, key)
    if (r.value === undefined || r.codec === undefined) return { value: undefined, version: r.version }
    const codec = await this.codec(store, r.codec)
    return { value: this.decode(codec, r.value), version: r.version }
  }

  async getMany(store: string, keys: readonly (Uint8Array | string)[]): Promise<{ values: (Buffer | undefined)[]; version: number }> {
    const r = await this.node.getManyStored(store, keys)
    if (r.codec === undefined) throw new StoreError('RO_BAD_FORMAT', `${this.endpoint}: stored values without their codec`)
    const codec = await this.codec(store, r.codec)
    return { values: r.values.map((v) => (v === undefined ? undefined : this.decode(codec, v))), version: r.version }
  }

  close(): void {
    this.node.close()
  }

  private codec(store: string, ref: StoredCodecRef): Promise<ValueCodec> {
    return this.decoders.codecFor(ref, () => this.node.dictionary(store), this.endpoint)
  }

  private decode(codec: ValueCodec, stored: Buffer): Buffer {
    try {
      return decodeAtMost(codec, stored, this.maxValueBytes)
    } catch (err) {
      // The decoder's own verdict, told with the node it came from.
      if (isStoreError(err) && (err.code === 'RO_TOO_LARGE' || err.code === 'RO_CORRUPT'))
        throw new StoreError(err.code, `${this.endpoint}: ${err.message}`, { cause: err })
      throw new StoreError('RO_CORRUPT', `${this.endpoint}: a ${codec.name} value does not decompress`, { cause: err })
    }
  }
}
