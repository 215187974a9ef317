import { METADATA_FILE } from '../formats/store/layout/metadata'
import { DEFAULT_BACKOFF } from './transfer/backoff'
import type { FsGate } from './transfer/fs-gate'
import { readSmall } from './transfer/read-small'
import { openSource } from './sources/open-source'

/**
 * Whether a build output holds format 2 (its root `metadata.json` is a version manifest,
 * listing `partitionFiles`), so that a fetch that names only a source fetches this node's
 * partitions of it. A source that cannot be read here says so in the fetch that follows,
 * with that fetch's own errors: this probe then answers false.
 */
export async function isPartitionedSource(
  source: string,
  o: { readonly signal: AbortSignal; readonly allowedSources?: readonly string[]; readonly gate?: FsGate },
): Promise<boolean> {
  let opened
  try {
    opened = await openSource(source, o)
    const bytes = await readSmall(opened, METADATA_FILE, {
      maxBytes: 16 << 20,
      signal: o.signal,
      retries: 1,
      backoff: DEFAULT_BACKOFF,
      stallTimeoutMs: 10_000,
    })
    const json = JSON.parse(bytes.toString('utf8')) as unknown
    return typeof json === 'object' && json !== null && 'partitionFiles' in json
  } catch {
    return false
  } finally {
    opened?.close?.()
  }
}
