import { crc32 } from '../../common/crc32'
import { md5 } from '../../common/md5'
import {
  LOOKUP_COLD,
  LOOKUP_HIT,
  LOOKUP_MISS,
  LOOKUP_NEEDS_ROOM,
  type LookupChunkSpec,
  type LookupFunctions,
  type LookupSpec,
} from '../../common/native'
import { HEADER_SIZE, INDEX_BLOCK_BYTES, INDEX_ENTRY_SIZE } from '../../formats/store/chunk/header'
import { RECORD_HEADER_SIZE } from '../../formats/store/chunk/record'
import { writeFrame } from '../../formats/store/chunk/value-framing'

/**
 * JavaScript twin of the addon's createLookup (native/lookup/lookup.c), same signature and the
 * same statuses, step for step: key hash, chunk, interpolation or binary search (with
 * the radix table), record bounds, CRC, key compare, prefix collisions. Windows are
 * addressed like the native code addresses its one mapping; bytes that straddle two
 * windows are copied.
 */

const TWO32 = 0x100000000
const TWO64 = TWO32 * TWO32
const PAST_END = -1
const CRC = -2
const FOREIGN_KEY = -3
const BAD_OFFSET = -4
const ORDER = -5
const INDEX_DAMAGED = -6
/** Entries whose index blocks a miss re-checks: the last ones the search compared (native: VISITED_MAX). */
const VISITED_MAX = 8
const NOT_THIS_KEY = 2
/** The page the residency vector is indexed by in the twin (native: the system's). */
const PAGE_BYTES = 4096

interface Chunk {
  readonly spec: LookupChunkSpec
  readonly windowBytes: number
  readonly index: readonly DataView[]
  readonly data: readonly Uint8Array[]
}

interface Found {
  chunk: number
  probes: number
  valueOffset: number
  valueLength: number
  recordOffset: number
}

export function createLookupJs(spec: LookupSpec): LookupFunctions {
  const chunks: Chunk[] = spec.chunks.map((c) => ({
    spec: c,
    windowBytes: c.index[0]?.byteLength ?? 1,
    index: c.index.map((w) => new DataView(w)),
    data: c.data.map((w) => new Uint8Array(w)),
  }))
  const hash = new Uint8Array(16)
  const found: Found = { chunk: 0, probes: 0, valueOffset: 0, valueLength: 0, recordOffset: 0 }

  const keyHash = (key: Uint8Array, out: Uint8Array): void => {
    md5(key, out)
    if (spec.collideBits >= 0) {
      out[0] = out[0]! & ((1 << spec.collideBits) - 1)
      out.fill(0, 1, 8)
    }
  }

  const entryHi = (c: Chunk, i: number): number => at(c, i, 0)
  const entryLo = (c: Chunk, i: number): number => at(c, i, 4)
  const entryOffset = (c: Chunk, i: number): number => at(c, i, 12, true) * TWO32 + at(c, i, 8, true)

  /** Bytes of the index file (blocks never straddle its windows: they are multiples of 64 KiB). */
  const indexBytes = (c: Chunk, off: number, len: number): Uint8Array => {
    const k = Math.floor(off / c.windowBytes)
    const v = c.index[k] as DataView
    return new Uint8Array(v.buffer, v.byteOffset + off - k * c.windowBytes, len)
  }

  const bytes = (c: Chunk, off: number, len: number): Uint8Array => {
    const w = c.spec.data[0]?.byteLength ?? 1
    const k = Math.floor(off / w)
    const local = off - k * w
    const first = c.data[k] as Uint8Array
    if (local + len <= first.length) return first.subarray(local, local + len)
    const copy = new Uint8Array(len)
    for (let done = 0; done < len;) {
      const win = c.data[Math.floor((off + done) / w)] as Uint8Array
      const from = (off + done) % w
      const n = Math.min(len - done, win.length - from)
      copy.set(win.subarray(from, from + n), done)
      done += n
    }
    return copy
  }

  /** Whether [off, off + len) of c's data is marked resident (native: resident() in lookup.c). */
  const resident = (c: Chunk, off: number, len: number): boolean => {
    const vec = c.spec.resident as Uint8Array
    for (let p = Math.floor(off / PAGE_BYTES), last = Math.floor((off + len - 1) / PAGE_BYTES); p <= last; p++) {
      if (((vec[p] as number) & 1) === 0) return false
    }
    return true
  }

  let coldCheck = false
  const checkRecord = (c: Chunk, off: number, key: Uint8Array, hi: number, lo: number): number => {
    found.recordOffset = off
    const size = c.spec.dataSize
    if (off < HEADER_SIZE || off > size || size - off < RECORD_HEADER_SIZE) return BAD_OFFSET
    const cold = coldCheck && c.spec.resident !== null
    if (cold && !resident(c, off, RECORD_HEADER_SIZE)) {
      found.valueLength = 0
      return LOOKUP_COLD
    }
    const head = new DataView(bytes(c, off, RECORD_HEADER_SIZE).slice().buffer)
    const klen = head.getUint32(0, true)
    const vlen = head.getUint32(4, true)
    if (klen + vlen > size - off - RECORD_HEADER_SIZE) return PAST_END
    if (cold && !resident(c, off, RECORD_HEADER_SIZE + klen + vlen)) {
      found.valueLength = RECORD_HEADER_SIZE + klen + vlen
      return LOOKUP_COLD
    }
    if (spec.checkCrc && crc32(bytes(c, off + RECORD_HEADER_SIZE, klen + vlen), 0) !== head.getUint32(8, true)) return CRC
    const stored = bytes(c, off + RECORD_HEADER_SIZE, klen)
    if (klen === key.length && equal(stored, key)) {
      found.valueOffset = off + RECORD_HEADER_SIZE + klen
      found.valueLength = vlen
      return LOOKUP_HIT
    }
    const h = new Uint8Array(16)
    keyHash(stored, h)
    return be32(h, 0) === hi && be32(h, 4) === lo ? NOT_THIS_KEY : FOREIGN_KEY
  }

  /** The key's chunk slot, or -1 when its partition is not held (native: ro_chunk_slot in lookup.h). */
  const parts = spec.partitions
  if (parts !== undefined) {
    const runs = parts.chunks > 0 ? chunks.length / parts.chunks : 0
    const ok =
      parts.count >= 1 && parts.slots.length === parts.count && Number.isInteger(runs) && parts.slots.every((s) => s >= -1 && s < runs)
    if (!ok) throw new TypeError('createLookup: bad spec (chunk windows, sizes, radix, partitions, key or out buffer)')
  }
  const slotOf = (h: Uint8Array): number => {
    if (parts === undefined) return be32(h, 4) % chunks.length
    const s = parts.slots[be32(h, 0) % parts.count] as number
    return s < 0 ? -1 : s * parts.chunks + (be32(h, 4) % parts.chunks)
  }

  const lookupHashed = (key: Uint8Array, h: Uint8Array): number => {
    const chunkNo = slotOf(h)
    found.probes = 0
    if (chunkNo < 0) {
      found.chunk = 0
      return LOOKUP_MISS
    }
    const c = chunks[chunkNo] as Chunk
    const hi = be32(h, 0)
    const lo = be32(h, 4)
    found.chunk = chunkNo
    const [pos, orderError] = search(c, hi, lo)
    if (orderError) {
      found.recordOffset = pos < c.spec.count ? entryOffset(c, pos) : 0
      return ORDER
    }
    if (pos >= c.spec.count || entryHi(c, pos) !== hi || entryLo(c, pos) !== lo) return missChecked(c, pos)
    let r = checkRecord(c, entryOffset(c, pos), key, hi, lo)
    if (r !== NOT_THIS_KEY) return r
    for (let i = pos - 1; i >= 0 && entryHi(c, i) === hi && entryLo(c, i) === lo; i--) {
      r = checkRecord(c, entryOffset(c, i), key, hi, lo)
      if (r !== NOT_THIS_KEY) return r
    }
    for (let i = pos + 1; i < c.spec.count && entryHi(c, i) === hi && entryLo(c, i) === lo; i++) {
      r = checkRecord(c, entryOffset(c, i), key, hi, lo)
      if (r !== NOT_THIS_KEY) return r
    }
    return LOOKUP_MISS
  }

  /** The last entries the search compared (a ring of VISITED_MAX), for missChecked. */
  const seen: number[] = []
  const visit = (i: number): void => {
    if (seen.length === VISITED_MAX) seen.shift()
    seen.push(i)
  }

  /** As miss_checked() in native/lookup/lookup.c: a miss stands only if the blocks that decided it are as at open. */
  const missChecked = (c: Chunk, pos: number): number => {
    const crcs = c.spec.indexCrcs
    if (!crcs || c.spec.count === 0) return LOOKUP_MISS
    const size = HEADER_SIZE + c.spec.count * INDEX_ENTRY_SIZE
    const blocks = new Set<number>()
    for (const i of [...(pos > 0 ? [pos - 1] : []), ...(pos < c.spec.count ? [pos] : []), ...seen]) {
      const block = Math.floor((HEADER_SIZE + i * INDEX_ENTRY_SIZE) / INDEX_BLOCK_BYTES)
      if (blocks.has(block)) continue
      blocks.add(block)
      const start = block * INDEX_BLOCK_BYTES
      const bytes = indexBytes(c, start, Math.min(INDEX_BLOCK_BYTES, size - start))
      if (crc32(bytes, 0) !== crcs[block]) {
        found.recordOffset = start
        return INDEX_DAMAGED
      }
    }
    return LOOKUP_MISS
  }

  /** [position, order error], as search() in native/lookup/lookup.c. */
  const search = (c: Chunk, hi: number, lo: number): [number, boolean] => {
    seen.length = 0
    let left = 0
    let right = c.spec.count
    if (spec.binary) {
      while (left < right) {
        const mid = left + Math.floor((right - left) / 2)
        found.probes++
        visit(mid)
        const cmp = compare(entryHi(c, mid), entryLo(c, mid), hi, lo)
        if (cmp === 0) return [mid, false]
        if (cmp < 0) left = mid + 1
        else right = mid
      }
      return [left, false]
    }
    let lowHi = 0
    let lowLo = 0
    let lowD = 0
    let highD = TWO64
    let highIsEntry = false
    let highHi = 0
    let highLo = 0
    const radix = c.spec.radix
    if (radix) {
      const shift = 32 - c.spec.radixBits
      const b = hi >>> shift
      right = Math.min(radix[b + 1] as number, c.spec.count)
      left = Math.min(radix[b] as number, right)
      lowHi = (b << shift) >>> 0
      lowD = lowHi * TWO32
      highD = lowD + 2 ** (64 - c.spec.radixBits)
    }
    let budget = interpolationBudget(c.spec.count)
    const target = hi * TWO32 + lo
    while (left < right) {
      let pos: number
      if (budget > 0 && highD > lowD) {
        budget--
        const p = left + ((target - lowD) / (highD - lowD)) * (right - left)
        pos = p <= left ? left : p >= right - 1 ? right - 1 : Math.floor(p)
      } else {
        pos = left + Math.floor((right - left) / 2)
      }
      found.probes++
      visit(pos)
      const kh = entryHi(c, pos)
      const kl = entryLo(c, pos)
      if (compare(kh, kl, lowHi, lowLo) < 0 || (highIsEntry && compare(kh, kl, highHi, highLo) > 0)) return [pos, true]
      const cmp = compare(kh, kl, hi, lo)
      if (cmp === 0) return [pos, false]
      if (cmp < 0) {
        left = pos + 1
        lowHi = kh
        lowLo = kl
        lowD = kh * TWO32 + kl
      } else {
        right = pos
        highHi = kh
        highLo = kl
        highIsEntry = true
        highD = kh * TWO32 + kl
      }
    }
    return [left, false]
  }

  const write = (status: number): number => {
    const o = spec.out
    o[0] = found.chunk
    o[1] = status === LOOKUP_HIT ? found.valueOffset : 0
    o[2] = status === LOOKUP_HIT || status === LOOKUP_COLD ? found.valueLength : 0
    o[3] = found.probes
    o[4] = found.recordOffset
    return status
  }

  let closed = false
  return {
    get(keyLength: number, cold = false): number {
      if (closed) throw new TypeError('get: the lookup is closed')
      coldCheck = cold
      if (!Number.isInteger(keyLength) || keyLength < 0 || keyLength > spec.key.length) {
        throw new TypeError('get(keyLength): keyLength must fit the key buffer')
      }
      found.valueOffset = 0
      found.valueLength = 0
      found.recordOffset = 0
      const key = spec.key.subarray(0, keyLength)
      keyHash(key, hash)
      return write(lookupHashed(key, hash))
    },
    getMany(keys: Uint8Array, ends: Uint32Array, count: number, out: Float64Array, cold = false): void {
      if (closed) throw new TypeError('getMany: the lookup is closed')
      coldCheck = cold
      if (count > ends.length || count * 4 > out.length) throw new TypeError('getMany: ends or out too short')
      const hashes = new Uint8Array(count * 16)
      const order = new Array<number>(count)
      for (let i = 0, start = 0; i < count; start = ends[i] as number, i++) {
        if ((ends[i] as number) < start || (ends[i] as number) > keys.length)
          throw new TypeError('getMany: ends must be non-decreasing and within keys')
        keyHash(keys.subarray(start, ends[i]), hashes.subarray(i * 16, i * 16 + 16))
        order[i] = i
      }
      // Not held (-1) sorts last, as the addon's unsigned sort key does.
      const chunkOf = (i: number): number => {
        const slot = slotOf(hashes.subarray(i * 16, i * 16 + 16))
        return slot < 0 ? TWO32 - 1 : slot
      }
      order.sort(
        (a, b) =>
          chunkOf(a) - chunkOf(b) ||
          compare(be32(hashes, a * 16), be32(hashes, a * 16 + 4), be32(hashes, b * 16), be32(hashes, b * 16 + 4)) ||
          a - b,
      )
      for (const i of order) {
        const start = i === 0 ? 0 : (ends[i - 1] as number)
        found.valueOffset = 0
        found.valueLength = 0
        found.recordOffset = 0
        const status = lookupHashed(keys.subarray(start, ends[i]), hashes.subarray(i * 16, i * 16 + 16))
        out[4 * i] = status
        out[4 * i + 1] = found.chunk
        out[4 * i + 2] = status < 0 || status === LOOKUP_COLD ? found.recordOffset : found.valueOffset
        out[4 * i + 3] = found.valueLength
      }
    },
    frame(
      results: Float64Array,
      count: number,
      out: Uint8Array,
      start: number,
      resp: boolean,
      absent: Uint8Array,
      suffix: Uint8Array,
    ): number {
      if (closed) throw new TypeError('frame: the lookup is closed')
      if (count * 4 > results.length || !(start >= 0 && start <= out.length)) throw new TypeError('frame: bad arguments')
      let pos = start
      for (let i = 0; i < count; i++) {
        const hit = results[4 * i] === LOOKUP_HIT
        if (!hit && results[4 * i] !== LOOKUP_MISS) throw new TypeError('frame: a result that is neither a hit nor a miss')
        let value: Uint8Array | undefined
        if (hit) {
          const c = chunks[results[4 * i + 1] as number]
          const off = results[4 * i + 2] as number
          const len = results[4 * i + 3] as number
          if (!c || !(off >= 0 && len >= 0 && off + len <= c.spec.dataSize)) throw new TypeError('frame: result outside the data file')
          value = bytes(c, off, len)
        }
        const next = writeFrame(out, pos, value, resp, absent, suffix)
        if (next < 0) throw new TypeError('frame: out is too small')
        pos = next
      }
      return pos
    },
    getFramed(
      keyLength: number,
      out: Uint8Array,
      start: number,
      resp: boolean,
      absent: Uint8Array,
      suffix: Uint8Array,
      cold = false,
    ): number {
      const status = this.get(keyLength, cold)
      spec.out[5] = start
      if (status !== LOOKUP_HIT && status !== LOOKUP_MISS) return status
      const c = chunks[found.chunk] as Chunk
      const next = writeFrame(
        out,
        start,
        status === LOOKUP_HIT ? bytes(c, found.valueOffset, found.valueLength) : undefined,
        resp,
        absent,
        suffix,
      )
      if (next < 0) return LOOKUP_NEEDS_ROOM
      spec.out[5] = next
      return status
    },
    close(): void {
      closed = true
    },
  }
}

function at(c: Chunk, i: number, field: number, littleEndian = false): number {
  const off = HEADER_SIZE + i * INDEX_ENTRY_SIZE
  const k = Math.floor(off / c.windowBytes)
  return (c.index[k] as DataView).getUint32(off - k * c.windowBytes + field, littleEndian)
}

function be32(b: Uint8Array, at: number): number {
  return ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0
}

function compare(ah: number, al: number, bh: number, bl: number): number {
  return ah !== bh ? (ah < bh ? -1 : 1) : al === bl ? 0 : al < bl ? -1 : 1
}

function equal(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

function interpolationBudget(n: number): number {
  if (n < 2) return 1
  return 2 * Math.ceil(Math.log2(Math.floor(Math.log2(n)) + 1)) + 2
}
