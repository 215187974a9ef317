import { randomFillSync } from 'node:crypto'
import { mkdir, open, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createFileHasher } from '../../formats/store/chunk/checksum'
import { dataFileName, indexFileName, nodeDirName } from '../../formats/store/layout/layout'
import { METADATA_FILE, type FileEntry, type StoreMetadata } from '../../formats/store/layout/metadata'

/** Sizes of one chunk's files; contents are random bytes (fetching does not look inside). */
export interface FixtureChunk {
  readonly dataBytes: number
  readonly indexBytes: number
}

export interface FixtureOptions {
  readonly nodeId?: number
  readonly store?: string
  readonly version?: number
  readonly chunks: readonly FixtureChunk[]
}

export interface Fixture {
  /** The build output root, what a fetch's `source` names. */
  readonly root: string
  /** `<root>/node-<id>` */
  readonly nodeDir: string
  readonly metadata: StoreMetadata
  readonly totalBytes: number
}

export async function writeRandomFile(path: string, size: number): Promise<string> {
  const hasher = await createFileHasher('xxh64')
  const fh = await open(path, 'w')
  try {
    const block = Buffer.alloc(Math.min(size, 4 << 20))
    for (let done = 0; done < size;) {
      const n = Math.min(block.length, size - done)
      const piece = block.subarray(0, n)
      randomFillSync(piece)
      hasher.update(piece)
      await fh.write(piece, 0, n, done)
      done += n
    }
  } finally {
    await fh.close()
  }
  return hasher.digest()
}

/** A valid metadata object for `files`; the shape the builder writes. */
export function fixtureMetadata(opts: {
  nodeId: number
  store: string
  version: number
  chunks: number
  files: readonly FileEntry[]
}): StoreMetadata {
  return {
    format: 'rostore',
    formatMajor: 1,
    formatMinor: 0,
    store: opts.store,
    version: opts.version,
    nodeId: opts.nodeId,
    clusterName: 'test',
    layout: [{ id: opts.nodeId, partitions: [0] }],
    replication: 1,
    keyHash: 'xxh64',
    keySerializer: 'string',
    valueSerializer: 'string',
    compression: 'none',
    chunks: opts.chunks,
    records: 0,
    chunkRecords: Array.from({ length: opts.chunks }, () => 0),
    checksumAlgorithm: 'xxh64',
    files: opts.files,
    build: {},
  }
}

/** Writes a build-output-like tree: `<root>/node-<id>/{metadata.json,<n>.data,<n>.index}`. */
export async function makeBuildOutput(root: string, opts: FixtureOptions): Promise<Fixture> {
  const nodeId = opts.nodeId ?? 0
  const nodeDir = join(root, nodeDirName(nodeId))
  await mkdir(nodeDir, { recursive: true })
  const files: FileEntry[] = []
  for (const [i, c] of opts.chunks.entries()) {
    for (const [name, size] of [
      [dataFileName(i), c.dataBytes],
      [indexFileName(i), c.indexBytes],
    ] as const) {
      files.push({ name, size, checksum: await writeRandomFile(join(nodeDir, name), size) })
    }
  }
  const metadata = fixtureMetadata({
    nodeId,
    store: opts.store ?? 'teststore',
    version: opts.version ?? 1,
    chunks: opts.chunks.length,
    files,
  })
  await writeFile(join(nodeDir, METADATA_FILE), JSON.stringify(metadata, null, 2))
  return { root, nodeDir, metadata, totalBytes: files.reduce((a, f) => a + f.size, 0) }
}

/** Replaces a fixture's metadata.json with arbitrary JSON (for manifest refusal tests). */
export async function writeManifest(nodeDir: string, manifest: unknown): Promise<void> {
  await writeFile(join(nodeDir, METADATA_FILE), JSON.stringify(manifest))
}

/** Flips one byte of a file in place. */
export async function corruptByte(path: string, at: number): Promise<void> {
  const fh = await open(path, 'r+')
  try {
    const b = Buffer.alloc(1)
    await fh.read(b, 0, 1, at)
    b[0] = (b[0] ?? 0) ^ 0xff
    await fh.write(b, 0, 1, at)
  } finally {
    await fh.close()
  }
}
