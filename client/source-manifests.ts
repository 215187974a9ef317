import { isAbsolute, resolve } from 'node:path'
import { StoreError } from '../common/errors'
import type { Cluster } from '../cluster/cluster'
import { sameLayout, clusterLayout } from '../cluster/cluster'
import { DEFAULT_BACKOFF } from '../fetcher/backoff'
import { parseManifest } from '../fetcher/manifest'
import { readSmall } from '../fetcher/read-small'
import { openSource } from '../fetcher/sources/open-source'
import { nodeDirName } from '../formats/store/layout'
import { METADATA_FILE, type StoreMetadata } from '../formats/store/metadata'

/** A build output as nodes will fetch it: a URL, or an absolute path. */
export function normalizeSource(from: string): string {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(from) || isAbsolute(from) ? from : resolve(from)
}

/**
 * Reads every node's metadata of a build output and checks, before anything is fetched,
 * that it is one version of `store` built for this cluster's layout (node ids and
 * partitions; hosts and ports may differ).
 */
export async function readBuildManifests(
  cluster: Cluster,
  store: string,
  from: string,
  signal: AbortSignal,
): Promise<Map<number, StoreMetadata>> {
  const source = await openSource(from)
  const out = new Map<number, StoreMetadata>()
  try {
    // Nodes listed without partitions (addresses only) are not in the build's layout.
    for (const node of clusterLayout(cluster)) {
      const name = `${nodeDirName(node.id)}/${METADATA_FILE}`
      const bytes = await readSmall(source, name, {
        maxBytes: 16 << 20,
        signal,
        retries: 2,
        backoff: DEFAULT_BACKOFF,
        stallTimeoutMs: 10_000,
      })
      const meta = parseManifest(bytes, source.describe(name), { nodeId: node.id, store })
      if (!sameLayout(meta.layout, clusterLayout(cluster))) {
        throw new StoreError(
          'RO_CONFLICT',
          `${source.describe(name)}: built for a different cluster layout (node ids and partitions) than ${cluster.name}; rebuild for this cluster`,
        )
      }
      out.set(node.id, meta)
    }
  } finally {
    source.close?.()
  }
  const versions = new Set([...out.values()].map((m) => m.version))
  if (versions.size !== 1) throw new StoreError('RO_CONFLICT', `${from}: nodes hold different versions (${[...versions].join(', ')})`)
  return out
}
