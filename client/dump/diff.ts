import { StoreError } from '../../common/errors'
import type { Cluster } from '../../cluster/cluster'
import { buildRing, replicaNodes } from '../../cluster/routing'
import { createKeyHasher } from '../../formats/store/layout/key-hash'
import type { StoreMetadata } from '../../formats/store/layout/metadata'
import { openVersion, walkPartitions } from '../../formats/store/scan/partition-walk'
import { slotCount } from '../../formats/store/layout/slots'
import { buildParts } from './build-parts'
import { liveVersionOfMost } from './dump'
import { openNodeDump } from './dump-stream'
import { NodeClient } from '../node-client'

/**
 * `rostore diff`: what changed between two versions of a store (live vs a named version,
 * a build vs what is live, two builds), counted and optionally listed, in bounded memory.
 *
 * Every chunk of a version is a run sorted by the keys' 8-byte hash prefix; a k-way merge
 * of the runs of each side gives both sides in one global hash order, and a merge walk of
 * the two compares them record by record. Records with equal prefixes (rare collisions)
 * are compared as a small group, so the order inside a group does not matter.
 */
export interface DiffRecord {
  readonly prefix: Buffer
  readonly key: Buffer
  readonly value: Buffer
}

export type DiffKind = 'added' | 'removed' | 'changed'

export interface DiffCounts {
  added: number
  removed: number
  changed: number
  unchanged: number
}

/** One side of a diff: its sorted runs, opened lazily, closed by `return()`. */
export type DiffSide = () => Promise<AsyncGenerator<DiffRecord>[]>

/** The k-way merge of runs sorted by prefix: one record in memory per run (a heap would pay from ~16 runs). */
export async function* mergeRuns(runs: AsyncGenerator<DiffRecord>[]): AsyncGenerator<DiffRecord> {
  const heads: (DiffRecord | undefined)[] = await Promise.all(runs.map(async (r) => (await r.next()).value ?? undefined))
  try {
    for (;;) {
      let best = -1
      for (let i = 0; i < heads.length; i++) {
        const h = heads[i]
        if (h && (best < 0 || h.prefix.compare((heads[best] as DiffRecord).prefix) < 0)) best = i
      }
      if (best < 0) return
      yield heads[best] as DiffRecord
      const next = await (runs[best] as AsyncGenerator<DiffRecord>).next()
      heads[best] = next.done ? undefined : next.value
    }
  } finally {
    await Promise.all(runs.map((r) => r.return(undefined)))
  }
}

/** All records of `it` with the prefix of the first, and the record after them. */
async function group(
  it: AsyncIterator<DiffRecord>,
  first: DiffRecord | undefined,
): Promise<{ recs: DiffRecord[]; next: DiffRecord | undefined }> {
  if (!first) return { recs: [], next: undefined }
  const recs = [first]
  for (;;) {
    const r = await it.next()
    if (r.done) return { recs, next: undefined }
    if (!r.value.prefix.equals(first.prefix)) return { recs, next: r.value }
    recs.push(r.value)
  }
}

/** Walks two sides in hash order; `onKey` hears every key that differs (old = `a`, new = `b`). */
export async function diffSorted(
  a: AsyncIterable<DiffRecord>,
  b: AsyncIterable<DiffRecord>,
  onKey?: (kind: DiffKind, key: Buffer) => void | Promise<void>,
): Promise<DiffCounts> {
  const counts: DiffCounts = { added: 0, removed: 0, changed: 0, unchanged: 0 }
  const ia = a[Symbol.asyncIterator]()
  const ib = b[Symbol.asyncIterator]()
  let ha = (await ia.next()).value as DiffRecord | undefined
  let hb = (await ib.next()).value as DiffRecord | undefined
  try {
    while (ha || hb) {
      const cmp = !ha ? 1 : !hb ? -1 : ha.prefix.compare(hb.prefix)
      const ga = cmp <= 0 ? await group(ia, ha) : { recs: [], next: ha }
      const gb = cmp >= 0 ? await group(ib, hb) : { recs: [], next: hb }
      ha = ga.next
      hb = gb.next
      const olds = new Map(ga.recs.map((r) => [r.key.toString('latin1'), r]))
      for (const r of gb.recs) {
        const old = olds.get(r.key.toString('latin1'))
        if (!old) {
          counts.added++
          await onKey?.('added', r.key)
        } else {
          olds.delete(r.key.toString('latin1'))
          if (old.value.equals(r.value)) counts.unchanged++
          else {
            counts.changed++
            await onKey?.('changed', r.key)
          }
        }
      }
      for (const r of olds.values()) {
        counts.removed++
        await onKey?.('removed', r.key)
      }
    }
  } finally {
    await ia.return?.()
    await ib.return?.()
  }
  return counts
}

/** A build's output directory as one side: a run per chunk slot of each directory read (build-parts.ts). */
export function buildSide(dir: string, opts: { blockBytes?: number } = {}): DiffSide {
  return async () => {
    const { partitionCount, parts } = await buildParts(dir)
    const runs: AsyncGenerator<DiffRecord>[] = []
    for (const { dir: d, meta, partitions } of parts) {
      const mine = new Set(partitions)
      for (let c = 0; c < slotCount(meta); c++) {
        // Format 2: a slot is one partition's chunk; slots of partitions read elsewhere add nothing.
        if (meta.held !== undefined && !mine.has(meta.held[Math.floor(c / meta.chunks)] as number)) continue
        runs.push(localRun(d, meta, mine, partitionCount, c, opts.blockBytes))
      }
    }
    return runs
  }
}

async function* localRun(
  dir: string,
  meta: StoreMetadata,
  partitions: ReadonlySet<number>,
  partitionCount: number,
  chunk: number,
  blockBytes: number | undefined,
): AsyncGenerator<DiffRecord> {
  const v = await openVersion(dir, meta)
  try {
    for await (const item of walkPartitions(v, { partitions, partitionCount, chunk, blockBytes })) {
      if (item.key === undefined) continue
      yield { prefix: Buffer.from(item.prefix), key: Buffer.from(item.key), value: Buffer.from(item.value) }
    }
  } finally {
    await v.close()
  }
}

/**
 * A version served by a cluster as one side (`version` undefined: the live one of most
 * nodes): each master partition from its master node, one stream per node and chunk.
 */
export function clusterSide(opts: { cluster: Cluster; store: string; version?: number; token?: string }): DiffSide {
  return async () => {
    const settled = await Promise.allSettled(
      opts.cluster.nodes.map(async (n) => {
        const c = new NodeClient(n, { adminToken: opts.token })
        try {
          return await c.storeInfo(opts.store)
        } finally {
          c.close()
        }
      }),
    )
    const infos = settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []))
    const info = infos[0]
    if (!info) throw new StoreError('RO_UNAVAILABLE', `no node could describe store ${opts.store}`)
    const version = opts.version ?? liveVersionOfMost(new Map(infos.map((i) => [i.nodeId, i])))
    const ring = buildRing(info.layout)
    const byNode = new Map<number, number[]>()
    for (let p = 0; p < ring.partitionCount; p++) {
      const master = replicaNodes(ring, p, info.replication)[0] as number
      byNode.set(master, [...(byNode.get(master) ?? []), p])
    }
    const hasher = await createKeyHasher(info.keyHash)
    const runs: AsyncGenerator<DiffRecord>[] = []
    for (const [id, partitions] of byNode) {
      const node = opts.cluster.nodes.find((n) => n.id === id)
      if (!node) throw new StoreError('RO_BAD_CLUSTER', `node ${id} is not in the cluster file`)
      const open = (chunk: number) => openNodeDump(node, { store: opts.store, version, partitions, chunk, token: opts.token })
      const first = await open(0)
      runs.push(remoteRun(Promise.resolve(first), hasher.hash))
      for (let c = 1; c < first.head.chunks; c++) runs.push(remoteRun(open(c), hasher.hash))
    }
    return runs
  }
}

async function* remoteRun(opened: ReturnType<typeof openNodeDump>, hash: (key: Uint8Array) => Uint8Array): AsyncGenerator<DiffRecord> {
  const d = await opened
  try {
    for (;;) {
      const r = await d.frames.next()
      if (r.done) return
      if (r.value.type !== 'entry') continue
      const key = Buffer.from(r.value.key)
      yield { prefix: Buffer.from(hash(key).subarray(0, 8)), key, value: Buffer.from(r.value.value) }
    }
  } finally {
    await d.frames.return(undefined as never)
  }
}

/** Diff two sides: counts, and every differing key to `onKey` if given. */
export async function diffSides(
  a: DiffSide,
  b: DiffSide,
  onKey?: (kind: DiffKind, key: Buffer) => void | Promise<void>,
): Promise<DiffCounts> {
  const [ra, rb] = await Promise.all([a(), b()])
  return diffSorted(mergeRuns(ra), mergeRuns(rb), onKey)
}
