import { createReadStream } from 'node:fs'
import { open } from 'node:fs/promises'
import { StoreError } from '../../../common/errors'
import { inflateBody, type BodyCrc } from './patch-body'
import { PATCH_DELETE, PATCH_HEADER_SIZE, PATCH_PUT, decodePatchHeader, type PatchHeader } from './patch-file'

/** One operation of a patch; `value` is the stored value of a put. */
export interface PatchOp {
  readonly op: typeof PATCH_PUT | typeof PATCH_DELETE
  readonly key: Buffer
  readonly value?: Buffer
}

export interface OpenPatch {
  readonly header: PatchHeader
  /** The operations in file order, read and inflated as they are pulled; throws RO_CORRUPT on a bad body. */
  readonly ops: AsyncGenerator<PatchOp>
}

/** Reads a patch's header now and its body as it is pulled (bounded memory: one inflated block and one operation). */
export async function openPatch(file: string, name: string = file): Promise<OpenPatch> {
  const fh = await open(file, 'r')
  let header: PatchHeader
  let size: number
  try {
    const head = Buffer.alloc(PATCH_HEADER_SIZE)
    const { bytesRead } = await fh.read(head, 0, PATCH_HEADER_SIZE, 0)
    header = decodePatchHeader(head.subarray(0, bytesRead), name)
    size = (await fh.stat()).size
  } finally {
    await fh.close()
  }
  if (size !== PATCH_HEADER_SIZE + header.bodySize)
    throw new StoreError('RO_CORRUPT', `${name}: ${size} bytes, the header says ${PATCH_HEADER_SIZE + header.bodySize}`)
  return { header, ops: readOps(file, name, header) }
}

async function* readOps(file: string, name: string, header: PatchHeader): AsyncGenerator<PatchOp> {
  const bad = (msg: string): never => {
    throw new StoreError('RO_CORRUPT', `${name}: ${msg}`)
  }
  const raw = createReadStream(file, { start: PATCH_HEADER_SIZE, highWaterMark: 1 << 16 })
  const crc: BodyCrc = { value: 0 }
  const inflated = inflateBody(raw, header.codec, crc, header.bodySize, name)
  let pending: Buffer = Buffer.alloc(0)
  let count = 0
  try {
    for await (const chunk of inflated as AsyncIterable<Buffer>) {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
      let at = 0
      for (;;) {
        const op = parseOp(pending, at, bad)
        if (op === undefined) break
        at = op.end
        if (++count > header.ops) bad(`more operations than the ${header.ops} its header says`)
        yield op.op
      }
      pending = pending.subarray(at)
    }
  } catch (err) {
    if (err instanceof StoreError) throw err
    throw new StoreError('RO_CORRUPT', `${name}: the patch body does not inflate (${(err as Error).message})`, { cause: err })
  } finally {
    raw.destroy()
  }
  if (pending.length > 0) bad(`${pending.length} stray bytes after the last operation`)
  if (count !== header.ops) bad(`${count} operations, its header says ${header.ops}`)
  if (crc.value >>> 0 !== header.bodyCrc) bad('patch body fails its checksum')
}

/** The operation at `at`, or undefined when `b` does not hold all of it yet. */
function parseOp(b: Buffer, at: number, bad: (msg: string) => never): { op: PatchOp; end: number } | undefined {
  if (b.length - at < 5) return undefined
  const kind = b[at]
  if (kind !== PATCH_PUT && kind !== PATCH_DELETE) bad(`unknown operation ${String(kind)}`)
  const keyLen = b.readUInt32LE(at + 1)
  const k = at + 5
  if (b.length < k + keyLen) return undefined
  const key = Buffer.from(b.subarray(k, k + keyLen))
  if (kind === PATCH_DELETE) return { op: { op: PATCH_DELETE, key }, end: k + keyLen }
  if (b.length < k + keyLen + 4) return undefined
  const valueLen = b.readUInt32LE(k + keyLen)
  const v = k + keyLen + 4
  if (b.length < v + valueLen) return undefined
  return { op: { op: PATCH_PUT, key, value: Buffer.from(b.subarray(v, v + valueLen)) }, end: v + valueLen }
}
