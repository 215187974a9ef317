import { StoreError } from '../common/errors'
import type { Preload, ServingReader } from '../formats/store/read/store-reader-api'

export type OpenReader = (dir: string) => Promise<ServingReader>

/** The real reader, loaded on first use (unit tests inject their own), warmed as `preload` says. */
export function readerOpener(preload?: Preload): OpenReader {
  return async (dir) =>
    (await import('../formats/store/read/store-reader')).openServingReader(dir, preload === undefined ? {} : { preload })
}

/** The real reader with the default warm-up. */
export const defaultOpenReader: OpenReader = readerOpener()

/** What a version directory must hold to be served as `version` of `store` on this node. */
export interface VersionIdentity {
  readonly store: string
  readonly version: number
  /** When set, versions built for another node are refused. */
  readonly nodeId?: number
}

/** Open a version's reader and check it is the store, version and node it claims to be. */
export async function openVersionReader(open: OpenReader, dir: string, want: VersionIdentity): Promise<ServingReader> {
  const reader = await open(dir)
  const m = reader.metadata
  if (m.store !== want.store || m.version !== want.version) {
    closeQuietly(reader)
    throw new StoreError('RO_CORRUPT', `${dir} holds store ${JSON.stringify(m.store)} version ${m.version}`)
  }
  if (want.nodeId !== undefined && m.nodeId !== want.nodeId) {
    closeQuietly(reader)
    throw new StoreError('RO_CONFLICT', `${dir} was built for node ${m.nodeId}, this is node ${want.nodeId}`)
  }
  return reader
}

export function closeQuietly(reader: ServingReader): void {
  try {
    reader.close()
  } catch {
    // already failing; the first error is the one reported
  }
}
