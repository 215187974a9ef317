import { StoreError } from '../../../common/errors'
import type { PatchEntry } from '../../../formats/store/layout/partition-files'
import { partitionPatchTask, type BaseBuild } from '../../partition-patches'
import { MANIFEST_CHECKSUM_ALGORITHM } from '../../version-manifest'
import type { WorkerHandle } from './worker-handle'
import type { ReducedChunk } from './worker-protocol'

/**
 * build --base in the local engine: each partition's patch is diffed as soon as the reduce
 * has written its chunks, by a worker thread of its own while the build's workers go on
 * reducing (their fsyncs and writes leave CPU idle), then by every worker once the reduce
 * is done. One partition per worker at a time.
 */
export class PatchPhase {
  private readonly chunksDone: number[]
  private readonly fileBytes: number[]
  private readonly ready: { promise: Promise<void>; resolve: () => void }[]
  private readonly patches: (PatchEntry | undefined)[] = []
  private next = 0
  private failed: { err: unknown } | undefined
  private readonly loops: Promise<void>[] = []

  constructor(
    private readonly base: BaseBuild,
    private readonly dir: string,
    private readonly build: {
      readonly chunks: number
      readonly dataVersion: number
      readonly keyHash: string
      readonly partitions: number
    },
    patcher: WorkerHandle,
    private readonly signal: AbortSignal | undefined,
  ) {
    this.chunksDone = Array.from({ length: build.partitions }, () => 0)
    this.fileBytes = Array.from({ length: build.partitions }, () => 0)
    this.ready = Array.from({ length: build.partitions }, () => {
      let resolve = (): void => undefined
      const promise = new Promise<void>((r) => (resolve = r))
      return { promise, resolve }
    })
    this.loops.push(this.loop(patcher))
  }

  /** A chunk the reduce wrote: its partition's patch can start once all its chunks are there. */
  chunkDone(c: ReducedChunk): void {
    const p = c.partition as number
    this.fileBytes[p] = (this.fileBytes[p] as number) + c.indexSize + c.dataSize
    this.chunksDone[p] = (this.chunksDone[p] as number) + 1
    if (this.chunksDone[p] === this.build.chunks) this.ready[p]!.resolve()
  }

  /** The reduce failed: no partition still waiting is patched; resolves once none is being written. */
  async stop(err: unknown): Promise<void> {
    this.abort(err)
    await Promise.all(this.loops)
  }

  /** The reduce is done: `workers` join in; the patches by partition (undefined: none kept) once all are written. */
  async finish(workers: readonly WorkerHandle[]): Promise<(PatchEntry | undefined)[]> {
    for (const w of workers) this.loops.push(this.loop(w))
    // Every loop settles before any error is thrown: none still writes into the output.
    await Promise.all(this.loops)
    if (this.failed !== undefined) throw this.failed.err
    return Array.from({ length: this.build.partitions }, (_, p) => this.patches[p])
  }

  private abort(err: unknown): void {
    this.failed ??= { err }
    for (const r of this.ready) r.resolve()
  }

  private async loop(w: WorkerHandle): Promise<void> {
    while (this.failed === undefined && this.next < this.build.partitions) {
      const p = this.next++
      await this.ready[p]!.promise
      if (this.failed !== undefined) return
      if (this.signal?.aborted) return this.abort(new StoreError('RO_ABORTED', 'build cancelled'))
      const task = partitionPatchTask(
        this.base,
        this.dir,
        { ...this.build, checksumAlgorithm: MANIFEST_CHECKSUM_ALGORITHM },
        p,
        this.fileBytes[p] as number,
      )
      try {
        this.patches[p] = (await w.request({ type: 'patch', task }, 'patched')).patch
      } catch (err) {
        this.abort(err)
      }
    }
  }
}
