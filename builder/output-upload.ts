/**
 * Build output in object storage (`--output s3://bucket/prefix/`). The build is made in a
 * local directory as always, then every file of it is uploaded under the prefix, whatever
 * the layout: the store's files first, the manifests (`metadata.json`) last, so a reader
 * that finds a manifest finds every file it names. A failed upload deletes what it put
 * (best effort); the manifests are the last to go up and the first to be deleted.
 */
import { readdir } from 'node:fs/promises'
import { join, relative, sep } from 'node:path'
import { StoreError } from '../common/errors'
import { inParallel } from '../common/in-parallel'
import { METADATA_FILE } from '../formats/store/layout/metadata'
import { withRetries } from '../s3/retry'
import { S3Error } from '../s3/s3-error'
import type { S3Client } from '../s3/s3-client'
import { asPrefix, childOf, parseS3Url, type S3Location } from '../s3/s3-url'
import { sharedS3Client } from '../s3/shared-client'
import { uploadFile } from '../s3/upload'

export interface UploadSummary {
  readonly files: number
  readonly bytes: number
  readonly seconds: number
}

/** Files uploaded at once. */
const CONCURRENCY = 4

function outputLocation(url: string): S3Location {
  try {
    return parseS3Url(url)
  } catch (err) {
    throw new StoreError('RO_BAD_OPTION', `--output ${url}: ${(err as Error).message}`)
  }
}

function outputError(url: string, err: unknown): unknown {
  if (err instanceof StoreError) return err
  if (err instanceof S3Error)
    return new StoreError(err.permanent ? 'RO_BAD_OPTION' : 'RO_IO', `output ${url}: ${err.message}`, { cause: err })
  if (err instanceof Error && err.name !== 'AbortError')
    return new StoreError('RO_IO', `output ${url}: uploading failed: ${(err as NodeJS.ErrnoException).code ?? err.message}`, { cause: err })
  return err
}

/**
 * Checks, before a build starts, that the output prefix can be written and holds nothing
 * yet (like a local output directory, it must be new): RO_BAD_OPTION otherwise.
 */
export async function checkS3Output(url: string, s3: S3Client = sharedS3Client()): Promise<void> {
  const loc = outputLocation(url)
  if (loc.key === '') throw new StoreError('RO_BAD_OPTION', `--output ${url}: name a prefix inside the bucket, not the whole bucket`)
  try {
    const listing = s3.list(loc.bucket, asPrefix(loc.key))
    const first = await listing.next()
    await listing.return(undefined)
    if (first.done !== true) throw new StoreError('RO_BAD_OPTION', `output ${url} already holds objects; choose a new prefix`)
  } catch (err) {
    throw outputError(url, err)
  }
}

/** Every file under `dir`, as paths relative to it with '/' separators. */
async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = []
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) out.push(relative(dir, join(e.parentPath, e.name)).split(sep).join('/'))
  }
  return out.sort()
}

export function isManifest(name: string): boolean {
  return name === METADATA_FILE || name.endsWith(`/${METADATA_FILE}`)
}

/** Uploads the finished build in `dir` under `url`, manifests last. */
export async function uploadBuildOutput(
  dir: string,
  url: string,
  signal?: AbortSignal,
  s3: S3Client = sharedS3Client(),
): Promise<UploadSummary> {
  const started = performance.now()
  const root = outputLocation(url)
  const names = await filesUnder(dir)
  const data = names.filter((n) => !isManifest(n))
  const manifests = names.filter(isManifest)
  const put: string[] = []
  let bytes = 0
  const upload = async (name: string): Promise<void> => {
    await uploadFile(s3, join(dir, name), childOf(root, name), { signal, onBytes: (n) => (bytes += n) })
    put.push(name)
  }
  try {
    await inParallel(data, CONCURRENCY, upload)
    await inParallel(manifests, CONCURRENCY, upload)
  } catch (err) {
    const cleanup = [...put.filter(isManifest), ...put.filter((n) => !isManifest(n))]
    for (const name of cleanup) await withRetries(() => s3.delete(childOf(root, name)), { retries: 2 }).catch(() => undefined)
    throw outputError(url, err)
  }
  return { files: names.length, bytes, seconds: (performance.now() - started) / 1000 }
}
