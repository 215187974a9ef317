import { StoreError } from '../../common/errors'
import { URL_INDEX_SUFFIX, urlIndexJson } from '../../fetcher/sources/url-index'
import { METADATA_FILE } from '../../formats/store/layout/metadata'
import { withRetries } from '../../s3/retry'
import type { S3Client } from '../../s3/s3-client'
import { S3Error } from '../../s3/s3-error'
import { asPrefix, formatS3Url, parseS3Url } from '../../s3/s3-url'
import { sharedS3Client } from '../../s3/shared-client'

/**
 * `rostore presign s3://bucket/prefix/`: a build in S3 handed to nodes that hold no S3
 * credentials. A presigned URL signs one object, so every file of the build gets its own,
 * listed in an index object written beside the files (`build.urls.json`, fetcher/sources/
 * url-index.ts); the result is the presigned URL of that index, a source for `rostore push
 * --from`. Every URL expires after `expiresSeconds`: the push must finish before then.
 */
export interface PresignOptions {
  /** The build output's s3:// prefix (what `rostore build --output s3://...` wrote). */
  readonly from: string
  /** Lifetime of every URL, 1 s to 7 days (S3's bound); default 3600. */
  readonly expiresSeconds?: number
  readonly s3?: S3Client
}

export interface PresignResult {
  /** The presigned URL of the index: a credential, to be handed only to the push. */
  readonly url: string
  /** Where the index is (s3://), for cleanup. */
  readonly index: string
  readonly files: number
  readonly expiresSeconds: number
}

export const INDEX_NAME = `build${URL_INDEX_SUFFIX}`

export async function presignBuild(o: PresignOptions): Promise<PresignResult> {
  const expiresSeconds = o.expiresSeconds ?? 3600
  if (!Number.isSafeInteger(expiresSeconds) || expiresSeconds < 1 || expiresSeconds > 7 * 24 * 3600)
    throw new StoreError('RO_BAD_OPTION', `--expires-in ${expiresSeconds}: a presigned URL lives 1 s to 7 days (604800 s)`)
  let root
  try {
    root = parseS3Url(o.from)
  } catch (err) {
    throw new StoreError('RO_BAD_OPTION', `${o.from}: ${(err as Error).message}`)
  }
  if (root.key === '') throw new StoreError('RO_BAD_OPTION', `${o.from}: name the build's prefix, not the whole bucket`)
  const s3 = o.s3 ?? sharedS3Client()
  const prefix = asPrefix(root.key)
  const fail = (err: unknown): never => {
    if (err instanceof S3Error) throw new StoreError(err.transient ? 'RO_IO' : 'RO_BAD_INPUT', err.message, { cause: err })
    throw err
  }
  const names: string[] = []
  await withRetries(async () => {
    names.length = 0
    for await (const obj of s3.list(root.bucket, prefix)) {
      const name = obj.key.slice(prefix.length)
      if (name !== '' && !name.endsWith(URL_INDEX_SUFFIX)) names.push(name)
    }
  }).catch(fail)
  // Format 2 has its manifest at the root, format 1 one per node directory.
  if (!names.some((n) => n === METADATA_FILE || (/^node-\d+\//.test(n) && n.endsWith(`/${METADATA_FILE}`))))
    throw new StoreError('RO_NOT_FOUND', `${o.from}: no build here (no ${METADATA_FILE} nor node-<id>/${METADATA_FILE})`)
  names.sort()
  const files = new Map(names.map((n) => [n, s3.presignedGetUrl({ bucket: root.bucket, key: `${prefix}${n}` }, expiresSeconds)]))
  const index = { bucket: root.bucket, key: `${prefix}${INDEX_NAME}` }
  await withRetries(() => s3.put(index, Buffer.from(urlIndexJson(files)))).catch(fail)
  return { url: s3.presignedGetUrl(index, expiresSeconds), index: formatS3Url(index), files: names.length, expiresSeconds }
}
