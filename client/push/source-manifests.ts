import { isAbsolute, resolve } from 'node:path'
import { StoreError, isStoreError } from '../../common/errors'
import type { Cluster } from '../../cluster/cluster'
import { sameLayout, clusterLayout } from '../../cluster/cluster'
import { DEFAULT_BACKOFF } from '../../fetcher/transfer/backoff'
import { parseManifest } from '../../fetcher/manifest'
import { readSmall } from '../../fetcher/transfer/read-small'
import { openSource } from '../../fetcher/sources/open-source'
import type { FetchSource } from '../../fetcher/sources/source'
import { nodeDirName } from '../../formats/store/layout/layout'
import { validateManifest } from '../../formats/store/layout/manifest-io'
import { METADATA_FILE, type StoreMetadata } from '../../formats/store/layout/metadata'
import { nodeView, type VersionManifest } from '../../formats/store/layout/partition-files'

/** A build output as nodes will fetch it: a URL, or an absolute path. */
export function normalizeSource(from: string): string {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(from) || isAbsolute(from) ? from : resolve(from)
}

/**
 * What a push installs: each layout node's metadata (its fetch manifest), and in format 2
 * the version manifest they are views of (every partition once).
 */
export interface BuildManifests {
  readonly nodes: ReadonlyMap<number, StoreMetadata>
  readonly manifest?: VersionManifest
}

const SMALL = { maxBytes: 16 << 20, retries: 2, backoff: DEFAULT_BACKOFF, stallTimeoutMs: 10_000 }

/**
 * Reads a build output's manifests and checks, before anything is fetched, that it is one
 * version of `store` built for this cluster's layout (node ids and partitions; hosts and
 * ports may differ). Format 2 has one `metadata.json` at the root; format 1 one per node
 * directory.
 */
export async function readBuildManifests(cluster: Cluster, store: string, from: string, signal: AbortSignal): Promise<BuildManifests> {
  const source = await openSource(from)
  try {
    const manifest = await readVersionManifest(source, signal)
    if (manifest !== undefined) {
      const where = source.describe(METADATA_FILE)
      if (manifest.store !== store) throw new StoreError('RO_BAD_REQUEST', `${where}: a build of store ${manifest.store}, not ${store}`)
      checkLayout(manifest.layout, cluster, where)
      return { nodes: manifestNodes(manifest), manifest }
    }
    return { nodes: await readNodeManifests(source, cluster, store, from, signal) }
  } finally {
    source.close?.()
  }
}

/** Every layout node's view of a format-2 version. */
export function manifestNodes(manifest: VersionManifest): Map<number, StoreMetadata> {
  return new Map(manifest.layout.map((n) => [n.id, nodeView(manifest, n.id)]))
}

/** The root manifest of a format-2 build, or undefined when the root has none (format 1). */
async function readVersionManifest(source: FetchSource, signal: AbortSignal): Promise<VersionManifest | undefined> {
  let bytes: Buffer
  try {
    bytes = await readSmall(source, METADATA_FILE, { ...SMALL, signal })
  } catch (err) {
    // A source without a root manifest (a file, HTTP or S3 404) holds format 1 or nothing:
    // the node manifests tell which, with their own errors.
    if (isStoreError(err, 'RO_FETCH_FAILED') && /not found|NoSuchKey|HTTP 404/.test(err.message)) return undefined
    throw err
  }
  let json: unknown
  try {
    json = JSON.parse(bytes.toString('utf8'))
  } catch (err) {
    throw new StoreError('RO_FETCH_FAILED', `${source.describe(METADATA_FILE)}: not valid JSON, so not a manifest`, { cause: err })
  }
  return validateManifest(json, source.describe(METADATA_FILE))
}

async function readNodeManifests(
  source: FetchSource,
  cluster: Cluster,
  store: string,
  from: string,
  signal: AbortSignal,
): Promise<Map<number, StoreMetadata>> {
  const out = new Map<number, StoreMetadata>()
  // Nodes listed without partitions (addresses only) are not in the build's layout.
  for (const node of clusterLayout(cluster)) {
    const name = `${nodeDirName(node.id)}/${METADATA_FILE}`
    const bytes = await readSmall(source, name, { ...SMALL, signal })
    const meta = parseManifest(bytes, source.describe(name), { nodeId: node.id, store })
    checkLayout(meta.layout, cluster, source.describe(name))
    out.set(node.id, meta)
  }
  const versions = new Set([...out.values()].map((m) => m.version))
  if (versions.size !== 1) throw new StoreError('RO_CONFLICT', `${from}: nodes hold different versions (${[...versions].join(', ')})`)
  return out
}

function checkLayout(layout: StoreMetadata['layout'], cluster: Cluster, where: string): void {
  if (!sameLayout(layout, clusterLayout(cluster))) {
    throw new StoreError(
      'RO_CONFLICT',
      `${where}: built for a different cluster layout (node ids and partitions) than ${cluster.name}; rebuild for this cluster, or rebalance`,
    )
  }
}
