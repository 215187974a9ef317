import { closeSync, fsyncSync, openSync, unlinkSync } from 'node:fs'
import { crc32 } from '../../../common/crc32'
import { writeAll } from '../../../common/sync-io'
import { blockCompressor, type BlockCompressor } from './patch-body'
import { PATCH_DELETE, PATCH_HEADER_SIZE, PATCH_PUT, encodePatchHeader, encodePatchOp, type PatchCodec } from './patch-file'

/**
 * Writes one partition patch (patch-file.ts) from operations given in the partition's
 * record order. Operations are gathered into blocks of about 1 MiB, each compressed on its
 * own (patch-body.ts), so memory stays at one block. Synchronous, like ChunkWriter: the
 * builder has nothing else to do.
 */
const BLOCK_BYTES = 1 << 20

export interface PatchIdentity {
  readonly partition: number
  readonly chunks: number
  readonly baseDataVersion: number
  readonly dataVersion: number
}

export interface WrittenPatch {
  readonly ops: number
  readonly puts: number
  readonly deletes: number
  /** Whole file, header included. */
  readonly size: number
}

export class PatchWriter {
  private readonly fd: number
  private block: Buffer[] = []
  private blockBytes = 0
  private pos = PATCH_HEADER_SIZE
  private bodyCrc = 0
  private puts = 0
  private deletes = 0
  private readonly compressor: BlockCompressor

  /** `codec` absent: zstd where the addon's libzstd loads, else gzip. */
  constructor(
    private readonly file: string,
    private readonly id: PatchIdentity,
    codec?: PatchCodec,
  ) {
    this.compressor = blockCompressor(codec)
    this.fd = openSync(file, 'w')
  }

  put(key: Uint8Array, value: Uint8Array): void {
    this.puts++
    this.push(encodePatchOp(PATCH_PUT, key, value))
  }

  delete(key: Uint8Array): void {
    this.deletes++
    this.push(encodePatchOp(PATCH_DELETE, key))
  }

  /** Body bytes written so far (compressed): lets a caller give up on a patch that grows too large. */
  get size(): number {
    return this.pos
  }

  /** Flushes, writes the header, fsyncs and closes. */
  finish(): WrittenPatch {
    this.flush()
    const ops = this.puts + this.deletes
    const header = encodePatchHeader({
      ...this.id,
      codec: this.compressor.codec,
      ops,
      bodySize: this.pos - PATCH_HEADER_SIZE,
      bodyCrc: this.bodyCrc,
    })
    writeAll(this.fd, header, 0)
    fsyncSync(this.fd)
    closeSync(this.fd)
    return { ops, puts: this.puts, deletes: this.deletes, size: this.pos }
  }

  /** Closes and removes the file: the patch is not wanted. */
  abandon(): void {
    closeSync(this.fd)
    unlinkSync(this.file)
  }

  private push(op: Buffer): void {
    this.block.push(op)
    this.blockBytes += op.length
    if (this.blockBytes >= BLOCK_BYTES) this.flush()
  }

  private flush(): void {
    // An empty patch still has a body: one block of nothing, so every reader inflates something.
    if (this.block.length === 0 && this.pos > PATCH_HEADER_SIZE) return
    const bytes = this.compressor.compress(Buffer.concat(this.block, this.blockBytes))
    writeAll(this.fd, bytes, this.pos)
    this.bodyCrc = crc32(bytes, this.bodyCrc)
    this.pos += bytes.length
    this.block = []
    this.blockBytes = 0
  }
}
