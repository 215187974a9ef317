import { existsSync } from 'node:fs'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { StoreError } from '../../common/errors'
import { buildRing, replicaNodes } from '../../cluster/routing'
import { readNodeOrBuild, wholeVersionView } from '../../formats/store/layout/manifest-io'
import type { StoreMetadata } from '../../formats/store/layout/metadata'
import { METADATA_FILE } from '../../formats/store/layout/metadata'
import { readMetadata } from '../../formats/store/layout/metadata-io'

/** One directory of a build output, and the master partitions to read from it. */
export interface BuildPart {
  readonly dir: string
  readonly meta: StoreMetadata
  readonly partitions: readonly number[]
}

/**
 * Where to read each wanted master partition of a build output once: format 1, the
 * first replica among its node-<id>/ directories; format 2 (metadata.json a version
 * manifest), the root itself, which holds every partition (manifest-io.ts wholeVersionView).
 */
export async function buildParts(
  dir: string,
  wanted?: readonly number[],
): Promise<{ readonly first: StoreMetadata; readonly partitionCount: number; readonly parts: readonly BuildPart[] }> {
  if (existsSync(join(dir, METADATA_FILE))) {
    const found = await readNodeOrBuild(dir)
    if (found.kind === 'node') throw new StoreError('RO_BAD_OPTION', `${dir} is one node's directory, not a build output`)
    const meta = wholeVersionView(found.manifest)
    const partitionCount = found.manifest.partitions
    const partitions = wanted ?? Array.from({ length: partitionCount }, (_, p) => p)
    return { first: meta, partitionCount, parts: [{ dir, meta, partitions }] }
  }
  const names = existsSync(dir) ? (await readdir(dir)).filter((d) => /^node-\d+$/.test(d)).sort() : []
  if (names.length === 0)
    throw new StoreError('RO_BAD_OPTION', `${dir} holds no node-<id> directory nor a version manifest: not a build output`)
  const metas = await Promise.all(names.map(async (n) => ({ dir: join(dir, n), meta: await readMetadata(join(dir, n)) })))
  const first = metas[0]!.meta
  const ring = buildRing(first.layout)
  const all = wanted ?? Array.from({ length: ring.partitionCount }, (_, p) => p)
  const servedBy = new Map<number, number>()
  for (const p of all) {
    const holder = replicaNodes(ring, p, first.replication).find((n) => metas.some((m) => m.meta.nodeId === n))
    if (holder === undefined) throw new StoreError('RO_BAD_OPTION', `no node directory of ${dir} holds partition ${p}`)
    servedBy.set(p, holder)
  }
  const parts = metas
    .map(({ dir: d, meta }) => ({ dir: d, meta, partitions: all.filter((p) => servedBy.get(p) === meta.nodeId) }))
    .filter((p) => p.partitions.length > 0)
  return { first, partitionCount: ring.partitionCount, parts }
}
