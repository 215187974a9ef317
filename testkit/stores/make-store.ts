import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { nativeFunctions } from '../../common/native'
import { checksumFile } from '../../formats/store/chunk/checksum'
import { ChunkWriter } from '../../formats/store/chunk/chunk-writer'
import { createCodec } from '../../formats/store/chunk/codec'
import { createKeyHasher } from '../../formats/store/layout/key-hash'
import { dataFileName, indexFileName } from '../../formats/store/layout/layout'
import { COMPRESSIONS, FORMAT_MAJOR, FORMAT_MINOR, type Compression, type StoreMetadata } from '../../formats/store/layout/metadata'
import { writeMetadata } from '../../formats/store/layout/metadata-io'
import { chunkOf } from '../../formats/store/layout/layout'

export interface MakeStoreOptions {
  readonly store?: string
  readonly version?: number
  readonly nodeId?: number
  readonly chunks?: number
  readonly compression?: Compression
  readonly keyHash?: string
}

/**
 * Writes a complete, valid node directory straight from key/value pairs, in memory and
 * without the build pipeline: for tests of the reader, server, swapper and fetcher.
 * Every key is written to this one node (a single-node layout).
 */
export async function makeNodeDir(
  dir: string,
  records: Iterable<[string | Buffer, string | Buffer]>,
  opts: MakeStoreOptions = {},
): Promise<StoreMetadata> {
  const store = opts.store ?? 'test'
  const version = opts.version ?? 1
  const nodeId = opts.nodeId ?? 0
  const chunks = opts.chunks ?? 2
  const compression = opts.compression ?? 'none'
  const codec = createCodec(compression, { forEncode: true })
  const hasher = await createKeyHasher(opts.keyHash ?? 'md5')
  const perChunk: { hash: Buffer; key: Buffer; value: Buffer }[][] = Array.from({ length: chunks }, () => [])
  for (const [k, v] of records) {
    const key = Buffer.from(k)
    const hash = Buffer.from(hasher.hash(key))
    perChunk[chunkOf(hash, chunks)]!.push({ hash, key, value: codec.encode(Buffer.from(v)) })
  }
  await mkdir(dir, { recursive: true })
  const files: { name: string; size: number; checksum: string }[] = []
  const chunkRecords: number[] = []
  for (let c = 0; c < chunks; c++) {
    const list = perChunk[c]!.sort((a, b) => Buffer.compare(a.hash, b.hash) || Buffer.compare(a.key, b.key))
    const w = new ChunkWriter(dir, { store, version, nodeId, chunk: c }, codec.id)
    for (const r of list) w.add(r.hash, r.key, r.value)
    const s = w.finish()
    chunkRecords.push(s.records)
    files.push({ name: indexFileName(c), size: s.indexSize, checksum: await checksumFile(join(dir, indexFileName(c))) })
    files.push({ name: dataFileName(c), size: s.dataSize, checksum: await checksumFile(join(dir, dataFileName(c))) })
  }
  const meta: StoreMetadata = {
    format: 'rostore',
    formatMajor: FORMAT_MAJOR,
    formatMinor: FORMAT_MINOR,
    store,
    version,
    nodeId,
    clusterName: 'test',
    layout: [{ id: nodeId, partitions: [0] }],
    replication: 1,
    keyHash: hasher.name,
    keySerializer: 'string',
    valueSerializer: 'string',
    compression,
    chunks,
    records: chunkRecords.reduce((a, b) => a + b, 0),
    chunkRecords,
    checksumAlgorithm: 'xxh64',
    files,
    build: { source: 'testkit/make-store' },
  }
  await writeMetadata(dir, meta)
  return meta
}

/** The codecs this process can write: zstd needs the native addon (ROSTORE_NATIVE=0 runs skip it). */
export function writableCompressions(): Compression[] {
  return COMPRESSIONS.filter((c) => c !== 'zstd' || nativeFunctions() !== undefined)
}
