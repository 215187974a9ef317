import { createMD5, type IHasher } from 'hash-wasm'
import { batchHashes } from '../../../common/batch-hash'
import { md5 as md5Js } from '../../../common/md5'

/**
 * Key hashing. Every store records the name of the hasher that built it and readers use
 * the same one. Besides md5 there is a test-only hasher that keeps just a few bits of the
 * MD5 prefix, so tests can force index prefix collisions on a handful of keys.
 */
export interface KeyHasher {
  readonly name: string
  /** 16 bytes; a fresh buffer per call. */
  hash(key: Uint8Array): Uint8Array
  /** The hashes of keys src[starts[i], ends[i]) into out[16i, 16i + 16): the builder's batches. */
  hashBatch(src: Uint8Array, starts: Uint32Array, ends: Uint32Array, count: number, out: Uint8Array): void
}

export const MD5 = 'md5'
const COLLIDE = /^md5-collide-(\d{1,2})$/

/** Whether `name` is a key hash createKeyHasher knows (checked when metadata is read). */
export function isKnownKeyHash(name: string): boolean {
  return name === MD5 || COLLIDE.test(name)
}

/** Keys shorter than this are hashed by common/md5.ts, longer ones by hash-wasm. */
const SHORT_KEY_BYTES = 128

/**
 * MD5 of a key: plain JavaScript for short keys (one or two blocks: cheaper than a call
 * into wasm), hash-wasm from 128 bytes, where its compiled rounds win (RESULTS section 2,
 * building blocks).
 */
export async function createKeyHasher(name: string = MD5): Promise<KeyHasher> {
  const md5: IHasher = await createMD5()
  const plain = (key: Uint8Array): Uint8Array => {
    if (key.length < SHORT_KEY_BYTES) {
      const out = new Uint8Array(16)
      md5Js(key, out)
      return out
    }
    md5.init()
    md5.update(key)
    return md5.digest('binary')
  }
  const batch = batchHashes()
  const md5Batch = (src: Uint8Array, starts: Uint32Array, ends: Uint32Array, count: number, out: Uint8Array): void =>
    batch.md5Batch(src, starts, ends, count, out)
  if (name === MD5) return { name, hash: plain, hashBatch: md5Batch }
  const collide = COLLIDE.exec(name)
  if (collide) {
    // Keep only `bits` bits of byte 0 and zero bytes 1-7: routing and chunking still
    // work, and the 8-byte index prefix collides for almost every pair of keys.
    const bits = Number(collide[1])
    const collideAt = (h: Uint8Array, at: number): void => {
      h[at] = (h[at] as number) & ((1 << bits) - 1)
      h.fill(0, at + 1, at + 8)
    }
    return {
      name,
      hash: (key) => {
        const h = plain(key)
        collideAt(h, 0)
        return h
      },
      hashBatch: (src, starts, ends, count, out) => {
        md5Batch(src, starts, ends, count, out)
        for (let i = 0; i < count; i++) collideAt(out, 16 * i)
      },
    }
  }
  throw new RangeError(`unknown key hash ${name}`)
}

/**
 * For readers that hash with their own MD5 (the addon, common/md5.ts): -1 for md5,
 * N for the test hash md5-collide-N (keep N bits of byte 0, zero bytes 1-7).
 */
export function collideBitsOf(name: string): number {
  if (name === MD5) return -1
  const collide = COLLIDE.exec(name)
  // More than 8 bits of a byte keep the whole byte.
  if (collide) return Math.min(8, Number(collide[1]))
  throw new RangeError(`unknown key hash ${name}`)
}

/** Text keys are hashed as their UTF-8 bytes. */
export function keyBytes(key: Uint8Array | string): Uint8Array {
  return typeof key === 'string' ? Buffer.from(key, 'utf8') : key
}
