import { mkdir, readFile, rename, rm } from 'node:fs/promises'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { isStoreError } from '../common/errors'
import { METADATA_FILE, type FileEntry, type StoreMetadata } from '../formats/store/layout/metadata'
import { PatchThread } from '../formats/store/patch/patch-worker'
import type { PatchEntry, VersionManifest } from '../formats/store/layout/partition-files'
import { failureReason } from './transfer/failure-reason'

/**
 * Installing a partition by patch (docs/SERVING.md, "Delta pushes"): when the manifest names
 * a base whose files this node holds (live or kept version), the partition's patch is
 * fetched and the partition rebuilt from the base's files (formats/store/patch/patch-apply.ts)
 * in a hidden work directory of the staging directory; only files that match the build's
 * checksums are moved to their names. Any failure leaves nothing behind and the caller
 * fetches the partition's full files.
 */
export interface PatchPlan {
  readonly partition: number
  readonly patch: PatchEntry
  /** The installed version directory holding the base's files of the partition. */
  readonly baseDir: string
  /** The base is the live version: its pages are left in the page cache. */
  readonly live: boolean
}

/** Local failures end the fetch: another source would not cure them. */
const FATAL = new Set(['RO_IO', 'RO_NO_SPACE', 'RO_ABORTED'])

/**
 * Held partitions that have a patch against a base this node holds, with the directory to
 * rebuild from. `installed`: the store's version directories, the live one flagged.
 */
export async function patchPlans(
  manifest: VersionManifest,
  held: readonly number[],
  installed: readonly { readonly dir: string; readonly live: boolean }[],
): Promise<PatchPlan[]> {
  const base = manifest.base
  if (base === undefined) return []
  // The live version first: its pages are warm, so the rebuild reads less from disk.
  const holders: { dir: string; live: boolean; held: ReadonlySet<number> }[] = []
  for (const v of [...installed].sort((a, b) => Number(b.live) - Number(a.live))) {
    let meta: Partial<StoreMetadata>
    try {
      meta = JSON.parse(await readFile(join(v.dir, METADATA_FILE), 'utf8')) as Partial<StoreMetadata>
    } catch {
      continue
    }
    const same = meta.store === manifest.store && meta.held !== undefined && meta.chunks === manifest.chunks
    if (same && (meta.dataVersion ?? meta.version) === base.dataVersion) holders.push({ ...v, held: new Set(meta.held) })
  }
  const plans: PatchPlan[] = []
  for (const p of held) {
    const patch = manifest.partitionFiles[p]?.patch
    const from = holders.find((h) => h.held.has(p))
    if (patch !== undefined && from !== undefined) plans.push({ partition: p, patch, baseDir: from.dir, live: from.live })
  }
  return plans
}

export interface PatchRebuild {
  readonly destDir: string
  readonly manifest: VersionManifest
  /** Downloads a file of the build output into destDir at its name, checksummed, throttled. */
  readonly download: (entry: FileEntry) => Promise<void>
  readonly signal: AbortSignal
}

export type PatchOutcome = { readonly ok: true; readonly bytes: number } | { readonly ok: false; readonly reason: string }

/**
 * One partition by patch: rebuild from the downloaded patch, check, move into place; or a
 * reason to fetch it whole. The rebuild's local I/O is not paced by the fetch's throttle,
 * which paces bytes taken from the source: the new files leave the page cache as they are
 * written, and a base that is not live as it is read (docs/SERVING.md, "Delta pushes").
 */
async function rebuildByPatch(r: PatchRebuild, plan: PatchPlan, thread: PatchThread, downloaded: Promise<unknown>): Promise<PatchOutcome> {
  const work = join(r.destDir, `.rebuild-p${plan.partition}`)
  const patchFile = join(r.destDir, plan.patch.name)
  try {
    await downloaded
    await mkdir(work)
    const applied = await thread.apply({
      baseDir: plan.baseDir,
      patchFile,
      outDir: work,
      manifest: r.manifest,
      partition: plan.partition,
      dropBehind: !plan.live,
      writeBehind: true,
      signal: r.signal,
    })
    // Verified: each file takes its name, where peers and the swapper look.
    for (const f of applied.files) await rename(join(work, f.name), join(r.destDir, f.name))
    return { ok: true, bytes: plan.patch.size }
  } catch (err) {
    if (r.signal.aborted || (isStoreError(err) && FATAL.has(err.code))) throw err
    return { ok: false, reason: failureReason(err) }
  } finally {
    await rm(work, { recursive: true, force: true })
    await rm(patchFile, { force: true })
    await rm(`${patchFile}.part`, { force: true })
  }
}

export interface PatchResult {
  /** Partitions made by patch. */
  readonly partitions: readonly number[]
  /** Bytes of the patches moved. */
  readonly bytes: number
  /** Partitions whose patch failed, fetched whole instead. */
  readonly fellBack: readonly { readonly partition: number; readonly reason: string }[]
}

/**
 * Rebuilds at once: one per core beyond the one the node serves with, at most 4 (a rebuild
 * is a sequential read and write; more would only contend for the disk). One on 2 cores.
 */
export function rebuildWidth(cores: number = availableParallelism()): number {
  return Math.max(1, Math.min(4, cores - 1))
}

/**
 * Every plan, `width` rebuilds at a time, each in a worker thread kept for its next
 * rebuild; the patches downloaded one after another ahead of the rebuilds. Results come in
 * plan order.
 */
export async function installByPatches(r: PatchRebuild, plans: readonly PatchPlan[], width = rebuildWidth()): Promise<PatchResult> {
  const partitions: number[] = []
  const fellBack: { partition: number; reason: string }[] = []
  let bytes = 0
  if (plans.length === 0) return { partitions, bytes, fellBack }
  const threads = Array.from({ length: Math.min(width, plans.length) }, () => new PatchThread())
  let chain: Promise<unknown> = Promise.resolve()
  let stopped = false
  const downloads = plans.map((plan) => {
    const d = chain.then(() => {
      if (stopped) throw new Error('the install stopped')
      return r.download({ name: plan.patch.name, size: plan.patch.size, checksum: plan.patch.checksum })
    })
    // The next download waits for this one, failed or not; the rebuild sees its failure.
    chain = d.catch(() => undefined)
    return d
  })
  // Failures are seen by the rebuild that awaits them, or dropped when the install stops first.
  for (const d of downloads) d.catch(() => undefined)
  const outcomes: PatchOutcome[] = []
  let next = 0
  try {
    // A loop that fails stops the others from starting more; the rebuilds under way finish
    // (or see the abort) before the files are cleaned up.
    const loops = await Promise.allSettled(
      threads.map(async (thread) => {
        try {
          while (!stopped && next < plans.length) {
            const i = next++
            r.signal.throwIfAborted()
            outcomes[i] = await rebuildByPatch(r, plans[i] as PatchPlan, thread, downloads[i] as Promise<unknown>)
          }
        } catch (err) {
          stopped = true
          throw err
        }
      }),
    )
    for (const l of loops) if (l.status === 'rejected') throw l.reason
  } finally {
    stopped = true
    await Promise.all(threads.map((t) => t.close()))
    // Downloads not awaited (the install stopped): their files go once they settle.
    await chain
    await Promise.all(plans.map((p) => rm(join(r.destDir, p.patch.name), { force: true })))
    await Promise.all(plans.map((p) => rm(join(r.destDir, `${p.patch.name}.part`), { force: true })))
  }
  for (const [i, plan] of plans.entries()) {
    const out = outcomes[i] as PatchOutcome
    if (out.ok) {
      partitions.push(plan.partition)
      bytes += out.bytes
    } else fellBack.push({ partition: plan.partition, reason: out.reason })
  }
  return { partitions, bytes, fellBack }
}
