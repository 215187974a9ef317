import { closeSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { readU32BE } from '../../common/bytes'
import { StoreError } from '../../common/errors'
import { buildRing, replicaNodes, masterPartition } from '../../cluster/routing'
import { chunkOf } from './layout'
import { checksumFile } from './checksum'
import { openChunk, type OpenChunk } from './chunk-reader'
import { codecByName, type ValueCodec } from './codec'
import { HEADER_SIZE, corrupt } from './header'
import { createKeyHasher, type KeyHasher } from './key-hash'
import { METADATA_FILE, type StoreMetadata } from './metadata'
import { readMetadata } from './metadata-io'
import { walkRecords } from './record-walk'

export interface VerifyReport {
  readonly dir: string
  readonly store: string
  readonly version: number
  readonly nodeId: number
  readonly records: number
  readonly files: number
  readonly bytes: number
}

/**
 * Full check of one node directory: exactly the files the metadata lists, each of the
 * listed size and checksum; then every record walked: lengths in bounds, record CRC,
 * the key's hash equal to its index entry, the key in the right chunk and on a node
 * that is one of its replicas. What passes here can be served. `dropBehind`: the files
 * leave the page cache as they are read (a version not yet live, read once).
 */
export async function verifyStore(dir: string, opts: { readonly dropBehind?: boolean } = {}): Promise<VerifyReport> {
  const meta = await readMetadata(dir)
  let bytes = 0
  const present = new Set(readdirSync(dir))
  for (const name of present) {
    if (name !== METADATA_FILE && !meta.files.some((f) => f.name === name)) corrupt(join(dir, name), 'file not listed in the metadata')
  }
  for (const f of meta.files) {
    const path = join(dir, f.name)
    if (!present.has(f.name)) throw new StoreError('RO_CORRUPT', `${path}: missing`)
    const size = statSync(path).size
    if (size !== f.size) corrupt(path, `size ${size}, metadata says ${f.size}`)
    if ((await checksumFile(path, meta.checksumAlgorithm, { dropBehind: opts.dropBehind })) !== f.checksum) {
      throw new StoreError('RO_CHECKSUM_MISMATCH', `${path}: checksum does not match the metadata`)
    }
    bytes += size
  }
  const hasher = await createKeyHasher(meta.keyHash)
  const codec = codecByName(meta.compression)
  const ring = buildRing(meta.layout)
  for (let c = 0; c < meta.chunks; c++) {
    const chunk = await openChunk(dir, meta, c, codec, false)
    try {
      walkChunk(chunk, c, meta, hasher, codec, opts.dropBehind === true, (hash) =>
        replicaNodes(ring, masterPartition(hash, ring.partitionCount), meta.replication).includes(meta.nodeId),
      )
    } finally {
      closeSync(chunk.dataFd)
    }
  }
  return { dir, store: meta.store, version: meta.version, nodeId: meta.nodeId, records: meta.records, files: meta.files.length, bytes }
}

function walkChunk(
  chunk: OpenChunk,
  c: number,
  meta: StoreMetadata,
  hasher: KeyHasher,
  codec: ValueCodec,
  dropBehind: boolean,
  onThisNode: (hash: Uint8Array) => boolean,
): void {
  const file = chunk.dataFile
  let i = 0
  for (const { offset, key, value } of walkRecords(chunk.dataFd, HEADER_SIZE, chunk.dataSize, file, dropBehind)) {
    // Records are written in index order, back to back.
    if (i >= chunk.hi.length) corrupt(file, `more records than the index's ${chunk.hi.length}`)
    if (chunk.offsets[i] !== offset) corrupt(file, `index entry ${i} points to ${chunk.offsets[i]}, the record is at ${offset}`)
    const hash = hasher.hash(key)
    if (readU32BE(hash, 0) !== chunk.hi[i] || readU32BE(hash, 4) !== chunk.lo[i])
      corrupt(file, `record at ${offset}: key hash differs from index entry ${i}`)
    if (chunkOf(hash, meta.chunks) !== c) corrupt(file, `record at ${offset}: key belongs to chunk ${chunkOf(hash, meta.chunks)}`)
    if (!onThisNode(hash)) corrupt(file, `record at ${offset}: key does not belong on node ${meta.nodeId}`)
    try {
      codec.decode(value)
    } catch (err) {
      corrupt(file, `record at ${offset}: value does not decompress: ${(err as Error).message}`)
    }
    i++
  }
  if (i !== chunk.hi.length) corrupt(file, `${i} records, the index has ${chunk.hi.length}`)
}
