import { constants } from 'node:fs'
import { copyFile, link, lstat, mkdir, open, realpath } from 'node:fs/promises'
import { isAbsolute, join } from 'node:path'
import { StoreError } from '../../common/errors'
import { METADATA_FILE, type StoreMetadata } from '../../formats/store/layout/metadata'
import { MANIFEST_FILE, nodeView } from '../../formats/store/layout/partition-files'
import { readMetadata, writeMetadata } from '../../formats/store/layout/metadata-io'
import { readNodeOrBuild } from '../../formats/store/layout/manifest-io'
import { fsyncDir } from './live-pointer'

function ioError(what: string, err: unknown): StoreError {
  const code = (err as NodeJS.ErrnoException).code
  if (code === 'ENOSPC') return new StoreError('RO_NO_SPACE', `${what}: no space left on device`, { cause: err })
  return new StoreError('RO_IO', `${what}: ${(err as Error).message}`, { cause: err })
}

/**
 * metadata.json of a node directory, validated (readMetadata). A directory without one
 * is RO_NOT_FOUND; a symlinked metadata.json is refused.
 */
export async function readNodeMetadata(dir: string): Promise<StoreMetadata> {
  const path = join(dir, METADATA_FILE)
  let st
  try {
    st = await lstat(path)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') {
      throw new StoreError('RO_NOT_FOUND', `${dir} is not a node directory: no ${METADATA_FILE}`)
    }
    throw ioError(`cannot read ${path}`, err)
  }
  if (!st.isFile()) throw new StoreError('RO_BAD_FORMAT', `${path} is not a regular file`)
  return readMetadata(dir)
}

/**
 * What an install takes from `dir`: a node directory's metadata, or (a format-2 build
 * output, whose metadata.json is the version manifest) this node's view of it, the node
 * taking only the partitions it holds. `nodeId` may be omitted for a one-node layout.
 */
export async function readInstallMetadata(
  dir: string,
  nodeId: number | undefined,
): Promise<{ readonly meta: StoreMetadata; readonly fromBuild: boolean }> {
  await readNodeMetadata(dir).catch((err: unknown) => {
    // A manifest is not a node's metadata: told apart below; anything else stands.
    if (!(err instanceof StoreError && err.code === 'RO_BAD_FORMAT' && /manifest|partitionFiles/.test(err.message))) throw err
  })
  const found = await readNodeOrBuild(dir)
  if (found.kind === 'node') return { meta: found.meta, fromBuild: false }
  const layout = found.manifest.layout
  const id = nodeId ?? (layout.length === 1 ? layout[0]!.id : undefined)
  if (id === undefined)
    throw new StoreError('RO_BAD_REQUEST', `${dir} is a build for ${layout.length} nodes: the node installing it must know its id`)
  if (!layout.some((n) => n.id === id)) throw new StoreError('RO_CONFLICT', `${dir} is a build whose layout does not include node ${id}`)
  return { meta: nodeView(found.manifest, id), fromBuild: true }
}

export interface StageOptions {
  /** Hard-link the files instead of copying them (falls back to a copy across file systems). */
  readonly link?: boolean
  readonly signal?: AbortSignal
  readonly onProgress?: (p: { readonly bytesDone: number; readonly bytesTotal: number; readonly file: string }) => void
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new StoreError('RO_ABORTED', 'cancelled')
}

async function fsyncFile(path: string): Promise<void> {
  const fh = await open(path, 'r')
  try {
    await fh.sync()
  } finally {
    await fh.close()
  }
}

/**
 * Copy (or hard-link) the node directory `src` into the new directory `dest`: every
 * file listed in its metadata, then metadata.json, each fsynced, then `dest` itself.
 * Only regular files named in the metadata are taken (no symlinks, no other files), read
 * through `src` with its symlinks resolved once at the start, so a symlink on the way that
 * changes during the copy cannot switch the source under it.
 * Copies use copy-on-write clones where the file system has them. Cancellable between
 * files. Returns the metadata read from `src`.
 */
export async function stageNodeDir(given: string, dest: string, opts: StageOptions = {}, nodeId?: number): Promise<StoreMetadata> {
  if (!isAbsolute(given)) throw new StoreError('RO_BAD_REQUEST', 'the source directory must be an absolute path')
  let src: string
  try {
    src = await realpath(given)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') throw new StoreError('RO_NOT_FOUND', `${given} is not a node directory: it does not exist`)
    throw ioError(`cannot read ${given}`, err)
  }
  const { meta, fromBuild } = await readInstallMetadata(src, nodeId)
  // A zstd version's dictionary goes with its chunk files.
  const files = meta.dictionary ? [meta.dictionary, ...meta.files] : meta.files
  const bytesTotal = files.reduce((n, f) => n + f.size, 0)
  let bytesDone = 0
  try {
    await mkdir(dest)
  } catch (err) {
    throw ioError(`cannot create ${dest}`, err)
  }
  // Format 2: the version manifest goes with the node view (verify checks one against the other).
  const names = [...files.map((f) => f.name), ...(meta.held !== undefined ? [MANIFEST_FILE] : []), METADATA_FILE]
  for (const name of names) {
    throwIfAborted(opts.signal)
    if (fromBuild && name === METADATA_FILE) {
      // The node's view of the build, written here; the build's metadata.json is the manifest.
      await writeMetadata(dest, meta)
      continue
    }
    const from = join(src, fromBuild && name === MANIFEST_FILE ? METADATA_FILE : name)
    const to = join(dest, name)
    let st
    try {
      st = await lstat(from)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        throw new StoreError('RO_CORRUPT', `${from} is listed in the metadata but missing`)
      }
      throw ioError(`cannot read ${from}`, err)
    }
    if (!st.isFile()) throw new StoreError('RO_BAD_FORMAT', `${from} is not a regular file`)
    const entry = files.find((f) => f.name === name)
    if (entry && entry.size !== st.size) {
      throw new StoreError('RO_CORRUPT', `${from} has ${st.size} bytes, the metadata says ${entry.size}`)
    }
    let linked = false
    if (opts.link) {
      try {
        await link(from, to)
        linked = true
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code
        if (code !== 'EXDEV' && code !== 'EPERM' && code !== 'EMLINK') throw ioError(`cannot link ${from}`, err)
      }
    }
    try {
      if (!linked) {
        await copyFile(from, to, constants.COPYFILE_EXCL | constants.COPYFILE_FICLONE)
        await fsyncFile(to)
      }
    } catch (err) {
      throw ioError(`cannot copy ${from}`, err)
    }
    if (entry) bytesDone += entry.size
    opts.onProgress?.({ bytesDone, bytesTotal, file: name })
  }
  await fsyncDir(dest)
  return meta
}
