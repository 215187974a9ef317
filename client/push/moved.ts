import type { RemoteJob } from '../node-client'

/** How a node's held partitions came in a format-2 fetch, from its job's result (docs/SERVING.md, "Delta pushes"). */
export interface NodePartitionsMoved {
  /** Rebuilt from a base the node holds and the partition's patch. */
  readonly byPatch: readonly number[]
  /** Files fetched whole (or hardlinked), patches that failed included. */
  readonly byFiles: readonly number[]
  /** Patches that failed, their partitions then fetched whole. */
  readonly fellBack: readonly { readonly partition: number; readonly reason: string }[]
  /** Bytes moved: the patches' plus the files fetched (from the build output and peers). */
  readonly bytes: number
}

const ints = (v: unknown): number[] => (Array.isArray(v) ? v.filter((x): x is number => Number.isSafeInteger(x)) : [])
const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0)

/** Undefined for a job that is not a format-2 fetch (a node of an older release says nothing of partitions). */
export function partitionsMoved(job: RemoteJob): NodePartitionsMoved | undefined {
  const r = job.result
  if (r === undefined || !Array.isArray(r['held'])) return undefined
  const patches = (typeof r['patches'] === 'object' && r['patches'] !== null ? r['patches'] : {}) as Record<string, unknown>
  const from = (typeof r['bytesFrom'] === 'object' && r['bytesFrom'] !== null ? r['bytesFrom'] : {}) as Record<string, unknown>
  const byPatch = ints(patches['partitions'])
  const patched = new Set(byPatch)
  const fellBack = (Array.isArray(patches['fellBack']) ? (patches['fellBack'] as unknown[]) : []).flatMap((f) => {
    const e = f as Record<string, unknown>
    return typeof f === 'object' && f !== null && Number.isSafeInteger(e['partition'])
      ? [{ partition: e['partition'] as number, reason: String(e['reason']) }]
      : []
  })
  return {
    byPatch,
    byFiles: ints(r['held']).filter((p) => !patched.has(p)),
    fellBack,
    bytes: num(patches['bytes']) + num(from['source']) + num(from['peer']),
  }
}
