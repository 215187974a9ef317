import { isUtf8 } from 'node:buffer'
import { crc32 } from 'node:zlib'
import { StoreError } from '../../common/errors'

/**
 * Framing of the node's streaming endpoints (`GET /admin/stores/<store>/dump/entries` and
 * `.../dump/keys`, docs/API.md "Streaming a store out"). Two framings, both ending with an
 * explicit end frame, so a stream cut anywhere (even between two records) is detected:
 *
 * binary (`format=binary`, Content-Type application/x-rostore-dump):
 *   frame   = entry | key | chunk | end
 *   entry   = 0x01  keyLen:u32be  valueLen:u32be  key  value
 *   key     = 0x02  keyLen:u32be  key
 *   chunk   = 0x03  chunk:u32be                    the records that follow are from this chunk
 *   end     = 0xFF  jsonLen:u32be  json            the last frame; nothing follows it
 *
 * JSON lines (`format=jsonl`, Content-Type application/x-ndjson), one object per line:
 *   {"key":"<text>","value":"<text>"}  key and value when they are valid UTF-8; a field that
 *   is not is sent as "key64"/"value64" (base64) instead; keys only: no value field
 *   {"chunk":N}                         as the binary chunk frame
 *   {"end":{...}}                       the last line
 *
 * The end frame's JSON object: {"records", "bytes", "crc32", "store", "version",
 * "partitions"}: records sent, bytes of every frame before the end frame, CRC-32 (zlib) of
 * those bytes, and the one version they all came from. Pure functions, no sockets.
 */
export const DUMP_FORMATS = ['binary', 'jsonl'] as const
export type DumpFraming = (typeof DUMP_FORMATS)[number]

export const FRAME_ENTRY = 0x01
export const FRAME_KEY = 0x02
export const FRAME_CHUNK = 0x03
export const FRAME_END = 0xff

export const DUMP_CONTENT_TYPES: Readonly<Record<DumpFraming, string>> = {
  binary: 'application/x-rostore-dump',
  jsonl: 'application/x-ndjson',
}

/**
 * Records as offsets into one buffer (formats/store/scan/partition-walk.ts WalkBatch): key i is
 * `data[keyAt[i], keyAt[i] + keyLen[i])`, its value the `valueLen[i]` bytes after it, or
 * `values[i]` when given.
 */
export interface RecordBatchView {
  readonly count: number
  readonly data: Buffer
  readonly keyAt: readonly number[]
  readonly keyLen: readonly number[]
  readonly valueLen: readonly number[]
  readonly values: readonly Buffer[] | undefined
}

/** Largest end frame JSON accepted by a decoder (it lists partitions: small). */
const MAX_END_JSON = 1 << 20

export interface DumpEnd {
  readonly records: number
  readonly bytes: number
  readonly crc32: number
  readonly store: string
  readonly version: number
  readonly partitions: readonly number[]
}

export type DumpFrame =
  | { readonly type: 'entry'; readonly key: Buffer; readonly value: Buffer }
  | { readonly type: 'key'; readonly key: Buffer }
  | { readonly type: 'chunk'; readonly chunk: number }
  | { readonly type: 'end'; readonly end: DumpEnd }

/** Encodes frames and keeps the counts and checksum the end frame carries. */
export class DumpEncoder {
  private records = 0
  private bytes = 0
  private crc = 0

  constructor(readonly framing: DumpFraming) {}

  entry(key: Uint8Array, value: Uint8Array): Buffer {
    this.records++
    if (this.framing === 'jsonl') return this.count(Buffer.from(`{${textField('key', key)},${textField('value', value)}}\n`, 'utf8'))
    const out = Buffer.allocUnsafe(9 + key.length + value.length)
    out[0] = FRAME_ENTRY
    out.writeUInt32BE(key.length, 1)
    out.writeUInt32BE(value.length, 5)
    out.set(key, 9)
    out.set(value, 9 + key.length)
    return this.count(out)
  }

  key(key: Uint8Array): Buffer {
    this.records++
    if (this.framing === 'jsonl') return this.count(Buffer.from(`{${textField('key', key)}}\n`, 'utf8'))
    const out = Buffer.allocUnsafe(5 + key.length)
    out[0] = FRAME_KEY
    out.writeUInt32BE(key.length, 1)
    out.set(key, 5)
    return this.count(out)
  }

  /**
   * The frames of a batch of records in one buffer (one allocation, one copy per record,
   * one checksum pass): entries, or keys when `keysOnly`.
   */
  many(b: RecordBatchView, keysOnly: boolean): Buffer {
    this.records += b.count
    const value = (i: number): Buffer => {
      if (b.values) return b.values[i] as Buffer
      const v = (b.keyAt[i] as number) + (b.keyLen[i] as number)
      return b.data.subarray(v, v + (b.valueLen[i] as number))
    }
    if (this.framing === 'jsonl') {
      const lines: string[] = []
      for (let i = 0; i < b.count; i++) {
        const k = b.keyAt[i] as number
        const key = b.data.subarray(k, k + (b.keyLen[i] as number))
        lines.push(keysOnly ? `{${textField('key', key)}}\n` : `{${textField('key', key)},${textField('value', value(i))}}\n`)
      }
      return this.count(Buffer.from(lines.join(''), 'utf8'))
    }
    let size = 0
    for (let i = 0; i < b.count; i++)
      size += (b.keyLen[i] as number) + (keysOnly ? 5 : 9 + (b.values ? (b.values[i] as Buffer).length : (b.valueLen[i] as number)))
    const out = Buffer.allocUnsafe(size)
    const src = bytesOf(b.data)
    const dst = bytesOf(out)
    let at = 0
    for (let i = 0; i < b.count; i++) {
      const k = b.keyAt[i] as number
      const kl = b.keyLen[i] as number
      if (keysOnly) {
        out[at] = FRAME_KEY
        out.writeUInt32BE(kl, at + 1)
        copyBytes(src, k, k + kl, dst, at + 5)
        at += 5 + kl
      } else if (b.values) {
        const v = b.values[i] as Buffer
        out[at] = FRAME_ENTRY
        out.writeUInt32BE(kl, at + 1)
        out.writeUInt32BE(v.length, at + 5)
        copyBytes(src, k, k + kl, dst, at + 9)
        v.copy(out, at + 9 + kl)
        at += 9 + kl + v.length
      } else {
        // Key and value lie next to each other in the data block: one copy.
        const vl = b.valueLen[i] as number
        out[at] = FRAME_ENTRY
        out.writeUInt32BE(kl, at + 1)
        out.writeUInt32BE(vl, at + 5)
        copyBytes(src, k, k + kl + vl, dst, at + 9)
        at += 9 + kl + vl
      }
    }
    return this.count(out)
  }

  chunk(chunk: number): Buffer {
    if (this.framing === 'jsonl') return this.count(Buffer.from(`{"chunk":${chunk}}\n`, 'utf8'))
    const out = Buffer.allocUnsafe(5)
    out[0] = FRAME_CHUNK
    out.writeUInt32BE(chunk, 1)
    return this.count(out)
  }

  end(info: { store: string; version: number; partitions: readonly number[] }): Buffer {
    const end: DumpEnd = { records: this.records, bytes: this.bytes, crc32: this.crc, ...info }
    const json = JSON.stringify(end)
    if (this.framing === 'jsonl') return Buffer.from(`{"end":${json}}\n`, 'utf8')
    const body = Buffer.from(json, 'utf8')
    const out = Buffer.allocUnsafe(5 + body.length)
    out[0] = FRAME_END
    out.writeUInt32BE(body.length, 1)
    body.copy(out, 5)
    return out
  }

  private count(frame: Buffer): Buffer {
    this.bytes += frame.length
    this.crc = crc32(frame, this.crc)
    return frame
  }
}

/** A buffer with a DataView over the same bytes, made once per batch for copyBytes. */
interface Bytes {
  readonly buf: Buffer
  readonly view: DataView
}

function bytesOf(buf: Buffer): Bytes {
  return { buf, view: new DataView(buf.buffer, buf.byteOffset, buf.byteLength) }
}

/**
 * Copies src[from, to) to out at `at`. Short ranges four bytes at a time through DataViews:
 * Buffer#copy costs a view and a call into C++ per copy, much of a stream's time for
 * records of ~100 bytes, and a byte loop does four times the steps of a word loop.
 */
function copyBytes(src: Bytes, from: number, to: number, out: Bytes, at: number): void {
  if (to - from > 256) {
    src.buf.copy(out.buf, at, from, to)
    return
  }
  let i = from
  for (; i + 4 <= to; i += 4, at += 4) out.view.setUint32(at, src.view.getUint32(i))
  for (; i < to; i++) out.buf[at++] = src.buf[i] as number
}

function textField(name: string, bytes: Uint8Array): string {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  return isUtf8(b) ? `"${name}":${JSON.stringify(b.toString('utf8'))}` : `"${name}64":"${b.toString('base64')}"`
}

/** A broken or cut stream: the client asks another replica. */
function broken(what: string): StoreError {
  return new StoreError('RO_UNAVAILABLE', `dump stream: ${what}`)
}

/**
 * Incremental decoder of either framing: push() the bytes as they arrive, get whole frames
 * back; finish() throws when the stream stopped before its end frame, or when the end
 * frame's counts or checksum disagree with what arrived.
 */
export class DumpDecoder {
  private pending: Buffer = Buffer.alloc(0)
  private records = 0
  private bytes = 0
  private crc = 0
  private ended: DumpEnd | undefined

  constructor(
    readonly framing: DumpFraming,
    /** Largest frame accepted (keys and values are bounded by the store format). */
    private readonly maxFrameBytes = 0x7fffffff,
  ) {}

  get end(): DumpEnd | undefined {
    return this.ended
  }

  /** Frames completed by `data` (views into an internal buffer: copy what you keep). */
  push(data: Buffer): DumpFrame[] {
    this.pending = this.pending.length === 0 ? data : Buffer.concat([this.pending, data])
    const frames: DumpFrame[] = []
    let at = 0
    for (;;) {
      if (this.ended) {
        if (at < this.pending.length) throw broken('bytes after the end frame')
        break
      }
      const used = this.framing === 'binary' ? this.binaryFrame(at, frames) : this.jsonFrame(at, frames)
      if (used === 0) break
      at += used
    }
    this.pending = this.pending.subarray(at)
    return frames
  }

  /** The end frame; throws RO_BAD_RESPONSE when the stream was cut or does not add up. */
  finish(): DumpEnd {
    if (!this.ended) throw broken(`cut before its end frame (after ${this.records} records, ${this.bytes} bytes)`)
    return this.ended
  }

  private consumed(frame: Buffer, records: number): void {
    this.bytes += frame.length
    this.crc = crc32(frame, this.crc)
    this.records += records
  }

  private takeEnd(json: string): DumpEnd {
    let end: DumpEnd
    try {
      end = JSON.parse(json) as DumpEnd
    } catch {
      throw broken('end frame is not JSON')
    }
    if (typeof end !== 'object' || end === null || typeof end.records !== 'number' || typeof end.version !== 'number')
      throw broken('end frame lacks its counts')
    if (end.records !== this.records || end.bytes !== this.bytes || end.crc32 !== this.crc) {
      throw broken(
        `end frame says ${end.records} records, ${end.bytes} bytes, crc ${end.crc32}; received ${this.records}, ${this.bytes}, crc ${this.crc}`,
      )
    }
    this.ended = end
    return end
  }

  private binaryFrame(at: number, out: DumpFrame[]): number {
    const p = this.pending
    if (p.length - at < 5) return 0
    const type = p[at] as number
    const len = p.readUInt32BE(at + 1)
    switch (type) {
      case FRAME_ENTRY: {
        if (p.length - at < 9) return 0
        const vlen = p.readUInt32BE(at + 5)
        if (len + vlen > this.maxFrameBytes) throw broken(`entry of ${len + vlen} bytes is larger than allowed`)
        const size = 9 + len + vlen
        if (p.length - at < size) return 0
        const frame = p.subarray(at, at + size)
        this.consumed(frame, 1)
        out.push({ type: 'entry', key: frame.subarray(9, 9 + len), value: frame.subarray(9 + len) })
        return size
      }
      case FRAME_KEY: {
        if (len > this.maxFrameBytes) throw broken(`key of ${len} bytes is larger than allowed`)
        if (p.length - at < 5 + len) return 0
        const frame = p.subarray(at, at + 5 + len)
        this.consumed(frame, 1)
        out.push({ type: 'key', key: frame.subarray(5) })
        return 5 + len
      }
      case FRAME_CHUNK:
        this.consumed(p.subarray(at, at + 5), 0)
        out.push({ type: 'chunk', chunk: len })
        return 5
      case FRAME_END: {
        if (len > MAX_END_JSON) throw broken('end frame too large')
        if (p.length - at < 5 + len) return 0
        out.push({ type: 'end', end: this.takeEnd(p.toString('utf8', at + 5, at + 5 + len)) })
        return 5 + len
      }
      default:
        throw broken(`unknown frame type ${type} at byte ${this.bytes}`)
    }
  }

  private jsonFrame(at: number, out: DumpFrame[]): number {
    const p = this.pending
    const nl = p.indexOf(0x0a, at)
    if (nl < 0) {
      if (p.length - at > this.maxFrameBytes * 2 + 64) throw broken('line longer than allowed')
      return 0
    }
    const line = p.subarray(at, nl + 1)
    let obj: Record<string, unknown>
    try {
      obj = JSON.parse(line.toString('utf8')) as Record<string, unknown>
    } catch {
      throw broken(`line at byte ${this.bytes} is not JSON`)
    }
    if (typeof obj !== 'object' || obj === null) throw broken(`line at byte ${this.bytes} is not an object`)
    if ('end' in obj) {
      out.push({ type: 'end', end: this.takeEnd(JSON.stringify(obj['end'])) })
      return line.length
    }
    if (typeof obj['chunk'] === 'number') {
      this.consumed(line, 0)
      out.push({ type: 'chunk', chunk: obj['chunk'] })
      return line.length
    }
    const key = field(obj, 'key')
    if (key === undefined) throw broken(`line at byte ${this.bytes} has no key`)
    const value = field(obj, 'value')
    this.consumed(line, 1)
    out.push(value === undefined ? { type: 'key', key } : { type: 'entry', key, value })
    return line.length
  }
}

function field(obj: Record<string, unknown>, name: string): Buffer | undefined {
  const text = obj[name]
  if (typeof text === 'string') return Buffer.from(text, 'utf8')
  const b64 = obj[`${name}64`]
  if (typeof b64 === 'string') return Buffer.from(b64, 'base64')
  return undefined
}
