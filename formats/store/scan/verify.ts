import { closeSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { readU32BE } from '../../../common/bytes'
import { StoreError } from '../../../common/errors'
import { buildRing, replicaNodes, masterPartition } from '../../../cluster/routing'
import { checksumFile } from '../chunk/checksum'
import { openChunk, type OpenChunk } from '../chunk/chunk-reader'
import type { ValueCodec } from '../chunk/codec'
import { versionCodec } from '../chunk/dictionary-file'
import { HEADER_SIZE, corrupt } from '../chunk/header'
import { createKeyHasher, type KeyHasher } from '../layout/key-hash'
import { readNodeOrBuild, readManifest, wholeVersionView } from '../layout/manifest-io'
import { METADATA_FILE, type StoreMetadata } from '../layout/metadata'
import { MANIFEST_FILE, chunkGeometry, chunkSlot, nodeView, slotFileNames, type ChunkGeometry } from '../layout/partition-files'
import { slotCount } from '../layout/slots'
import { walkRecords } from './record-walk'

export interface VerifyReport {
  readonly dir: string
  readonly store: string
  readonly version: number
  /** -1: a format-2 build output (every partition, no node). */
  readonly nodeId: number
  readonly records: number
  readonly files: number
  readonly bytes: number
}

/**
 * Full check of one node directory (format 1, or a format-2 node view with its
 * manifest.json) or of a format-2 build output (its manifest and every partition's
 * files): exactly the files the metadata lists, each of the listed size and checksum;
 * then every record walked: lengths in bounds, record CRC, the key's hash equal to its
 * index entry, the key in the right chunk (format 2: the right partition and chunk) and
 * on a node that is one of its replicas. What passes here can be served. `dropBehind`:
 * the files leave the page cache as they are read (a version not yet live, read once).
 */
export interface VerifyOptions {
  readonly dropBehind?: boolean
  /**
   * Files a patch rebuild wrote in this directory (formats/store/patch/patch-apply.ts): it
   * took their checksums as it wrote them and gave the records it added a walk's checks;
   * the records it copied had them when their version was installed. Their presence and
   * size are checked; they are not read again (neither checksummed nor walked).
   */
  readonly rebuilt?: ReadonlySet<string>
}

export async function verifyStore(dir: string, opts: VerifyOptions = {}): Promise<VerifyReport> {
  const found = await readNodeOrBuild(dir)
  const meta = found.kind === 'build' ? wholeVersionView(found.manifest) : found.meta
  const extra = [METADATA_FILE]
  if (meta.dictionary) extra.push(meta.dictionary.name)
  if (found.kind === 'node' && meta.held !== undefined) {
    await checkNodeManifest(dir, meta)
    extra.push(MANIFEST_FILE)
  }
  let bytes = 0
  const present = new Set(readdirSync(dir))
  for (const name of present) {
    if (!extra.includes(name) && !meta.files.some((f) => f.name === name)) corrupt(join(dir, name), 'file not listed in the metadata')
  }
  for (const f of meta.files) {
    const path = join(dir, f.name)
    if (!present.has(f.name)) throw new StoreError('RO_CORRUPT', `${path}: missing`)
    const size = statSync(path).size
    if (size !== f.size) corrupt(path, `size ${size}, metadata says ${f.size}`)
    if (
      opts.rebuilt?.has(f.name) !== true &&
      (await checksumFile(path, meta.checksumAlgorithm, { dropBehind: opts.dropBehind })) !== f.checksum
    ) {
      throw new StoreError('RO_CHECKSUM_MISMATCH', `${path}: checksum does not match the metadata`)
    }
    bytes += size
  }
  const hasher = await createKeyHasher(meta.keyHash)
  const codec = await versionCodec(dir, meta)
  const ring = buildRing(meta.layout)
  const geometry = chunkGeometry(meta)
  // Format 2: a record in its partition's slot is on a node that holds it (held is the layout's).
  const onThisNode =
    meta.held !== undefined
      ? () => true
      : (hash: Uint8Array) => replicaNodes(ring, masterPartition(hash, ring.partitionCount), meta.replication).includes(meta.nodeId)
  for (let s = 0; s < slotCount(meta); s++) {
    const names = slotFileNames(meta, s)
    if (opts.rebuilt?.has(names.index) === true && opts.rebuilt.has(names.data)) continue
    const chunk = await openChunk(dir, meta, s, codec, false)
    try {
      walkChunk(chunk, s, meta, geometry, hasher, codec, opts.dropBehind === true, onThisNode)
    } finally {
      closeSync(chunk.dataFd)
    }
  }
  return { dir, store: meta.store, version: meta.version, nodeId: meta.nodeId, records: meta.records, files: meta.files.length, bytes }
}

/** A format-2 node's manifest.json must be the manifest its node view was narrowed from. */
async function checkNodeManifest(dir: string, meta: StoreMetadata): Promise<void> {
  const manifest = await readManifest(dir, MANIFEST_FILE)
  const file = join(dir, MANIFEST_FILE)
  if (manifest.store !== meta.store || manifest.version !== meta.version) corrupt(file, 'belongs to another store or version')
  const view = nodeView(manifest, meta.nodeId)
  const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b)
  if (
    view.dataVersion !== meta.dataVersion ||
    !same(view.held, meta.held) ||
    !same(view.files, meta.files) ||
    !same(view.chunkRecords, meta.chunkRecords)
  ) {
    corrupt(file, `does not narrow to node ${meta.nodeId}'s metadata.json (held partitions, files or record counts differ)`)
  }
}

function walkChunk(
  chunk: OpenChunk,
  slot: number,
  meta: StoreMetadata,
  geometry: ChunkGeometry,
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
    const at = chunkSlot(hash, geometry)
    if (at !== slot) corrupt(file, `record at ${offset}: key belongs to ${at < 0 ? 'a partition not held here' : `chunk slot ${at}`}`)
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
