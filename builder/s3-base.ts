import { createWriteStream } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { StoreError } from '../common/errors'
import { inParallel } from '../common/in-parallel'
import { createFileHasher } from '../formats/store/chunk/checksum'
import { readManifest } from '../formats/store/layout/manifest-io'
import { METADATA_FILE, type FileEntry } from '../formats/store/layout/metadata'
import { withRetries } from '../s3/retry'
import { S3Error } from '../s3/s3-error'
import type { S3Client } from '../s3/s3-client'
import { asPrefix, childOf, formatS3Url, parseS3Url, type S3Location } from '../s3/s3-url'
import { sharedS3Client } from '../s3/shared-client'

/** Files of the base downloaded at once. */
const PARALLEL = 4

/** An s3:// base, downloaded: a local build output to diff against, removed after the build. */
export interface DownloadedBase {
  readonly dir: string
  remove(): Promise<void>
}

/**
 * `--base s3://bucket/prefix/` (an earlier build output uploaded there): its version
 * manifest and every file a diff reads (each partition file, and the zstd dictionary)
 * downloaded into a directory under `tmpdir`, each checked against the manifest's size and
 * XXH64 as it streams. The diff walks every record of the base, so the build needs all of
 * its bytes anyway; on local disk it reads them once more, for the partitions it patches.
 * A file the prefix does not hold (a build made with --patch-only) is RO_BAD_OPTION, as for a
 * local base.
 */
export async function downloadBase(
  url: string,
  tmpdir: string,
  signal?: AbortSignal,
  s3: S3Client = sharedS3Client(),
): Promise<DownloadedBase> {
  let root: S3Location
  try {
    root = parseS3Url(url)
  } catch (err) {
    throw new StoreError('RO_BAD_OPTION', `--base ${url}: ${(err as Error).message}`)
  }
  root = { ...root, key: asPrefix(root.key) }
  const dir = await mkdtemp(join(tmpdir, 'rostore-base-'))
  const remove = (): Promise<void> => rm(dir, { recursive: true, force: true })
  try {
    await download(s3, root, METADATA_FILE, join(dir, METADATA_FILE), undefined, signal, 'is missing: the prefix holds no build output')
    const manifest = await readManifest(dir)
    const files = [...manifest.partitionFiles.flatMap((p) => p.files), ...(manifest.dictionary ? [manifest.dictionary] : [])]
    // Every download has ended (the others stop taking files after a failure) before the
    // directory is removed: a removal racing a write would fail and hide the first error.
    await inParallel(files, PARALLEL, async (f) => {
      // The manifest was validated (names like p3-c0.data); a name is still never a path.
      if (basename(f.name) !== f.name) throw new StoreError('RO_BAD_FORMAT', `--base ${url}: the manifest names ${f.name}`)
      await download(s3, root, f.name, join(dir, f.name), f, signal, 'is missing (a build made with --patch-only cannot be a base)')
    })
    return { dir, remove }
  } catch (err) {
    await remove()
    throw err
  }
}

/** One object into `file`, retried while transient; with `entry`, its size and XXH64 checked; `missing` says what an absent one means. */
async function download(
  s3: S3Client,
  root: S3Location,
  name: string,
  file: string,
  entry: FileEntry | undefined,
  signal: AbortSignal | undefined,
  missing: string,
): Promise<void> {
  const loc = childOf(root, name)
  const where = `--base ${formatS3Url(root)}: ${name}`
  try {
    await withRetries(
      async () => {
        const hasher = await createFileHasher('xxh64')
        let bytes = 0
        const { stream } = await s3.get(loc, { signal })
        const count = new Transform({
          transform(chunk: Buffer, _enc, done) {
            bytes += chunk.length
            hasher.update(chunk)
            done(null, chunk)
          },
        })
        await pipeline(stream, count, createWriteStream(file), { signal })
        if (entry !== undefined && (bytes !== entry.size || hasher.digest() !== entry.checksum))
          throw new StoreError('RO_CHECKSUM_MISMATCH', `${where} does not match its size and checksum in the base's manifest`)
      },
      { signal },
    )
  } catch (err) {
    if (err instanceof S3Error && err.status === 404 && err.code !== 'NoSuchBucket')
      throw new StoreError('RO_BAD_OPTION', `${where} ${missing}`, { cause: err })
    if (err instanceof S3Error) throw new StoreError('RO_IO', `${where}: ${err.message}`, { cause: err })
    throw err
  }
}
