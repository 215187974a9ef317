import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import { StoreError, errorFromCode, errorMessage } from '../../../common/errors'
import type { AppliedPatch, ApplyPatchOptions } from './patch-apply'

/** What the thread says (patch-thread.ts): a request for throttle tokens, or a rebuild's one answer. */
export type PatchThreadMessage =
  | { readonly type: 'pace'; readonly bytes: number }
  | { readonly type: 'done'; readonly applied: AppliedPatch }
  | { readonly type: 'failed'; readonly code?: string; readonly message: string }

/** What this side says: a rebuild to run, or tokens granted. */
export type PatchThreadRequest = { readonly type: 'apply'; readonly data: PatchThreadData } | { readonly type: 'paced' }

/** The options that cross to the thread (the throttle and the signal stay here). */
export type PatchThreadData = Omit<ApplyPatchOptions, 'pace' | 'signal'>

interface Running {
  readonly partition: number
  readonly pace: ApplyPatchOptions['pace']
  readonly resolve: (a: AppliedPatch) => void
  readonly reject: (err: unknown) => void
  readonly done: () => void
}

/**
 * applyPatch in a worker thread, one rebuild at a time, the thread kept for the next one.
 * A rebuild reads a partition of the base and writes one as large, with synchronous
 * calls: on a node that serves from the same process, those would hold its event loop.
 * A thread costs a module load to start, more than a small partition's rebuild, so an
 * install's rebuilds share one (`close` ends it). The thread asks this side for throttle
 * tokens (`pace`) and waits for them. Cancelling terminates the thread and rejects with
 * RO_ABORTED (the next rebuild starts a new one); the caller removes the files either way.
 * Errors keep their StoreError code.
 */
export class PatchThread {
  private worker: Worker | undefined
  private running: Running | undefined

  apply(o: ApplyPatchOptions): Promise<AppliedPatch> {
    if (this.running !== undefined) return Promise.reject(new RangeError('PatchThread.apply: one rebuild at a time'))
    if (o.signal?.aborted) return Promise.reject(new StoreError('RO_ABORTED', 'cancelled'))
    const { pace, signal, ...data } = o
    const worker = this.start()
    return new Promise<AppliedPatch>((resolve, reject) => {
      const onAbort = (): void => {
        this.kill()
        reject(new StoreError('RO_ABORTED', 'cancelled'))
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      this.running = { partition: o.partition, pace, resolve, reject, done: () => signal?.removeEventListener('abort', onAbort) }
      worker.postMessage({ type: 'apply', data } satisfies PatchThreadRequest)
    })
  }

  /** Ends the thread (a rebuild still running is cancelled). */
  async close(): Promise<void> {
    const r = this.running
    const w = this.worker
    this.kill()
    r?.reject(new StoreError('RO_ABORTED', 'cancelled'))
    if (w !== undefined) await w.terminate()
  }

  private start(): Worker {
    if (this.worker !== undefined) return this.worker
    const worker = new Worker(join(__dirname, 'patch-thread.js'))
    this.worker = worker
    worker.on('message', (m: PatchThreadMessage) => {
      const r = this.running
      if (r === undefined || this.worker !== worker) return
      if (m.type === 'pace') {
        void (r.pace ? r.pace(m.bytes) : Promise.resolve()).then(
          () => this.running === r && worker.postMessage({ type: 'paced' } satisfies PatchThreadRequest),
          (err: unknown) => this.settle(r, () => r.reject(err)),
        )
      } else if (m.type === 'done') this.settle(r, () => r.resolve(m.applied))
      else this.settle(r, () => r.reject(errorFromCode(m.code, m.message)))
    })
    // A thread that dies (out of memory, a bug) says nothing about the patch: a plain Error.
    const died = (what: string, cause?: unknown): void => {
      if (this.worker !== worker) return
      const r = this.running
      this.kill()
      r?.reject(new Error(`rebuild of partition ${r.partition}: ${what}`, cause === undefined ? {} : { cause }))
    }
    worker.once('error', (err) => died(errorMessage(err), err))
    worker.once('exit', (code) => died(`the worker exited with code ${code}`))
    return worker
  }

  private settle(r: Running, fn: () => void): void {
    if (this.running !== r) return
    this.running = undefined
    r.done()
    fn()
  }

  /** Forgets the thread and whatever it was running (the caller settles that). */
  private kill(): void {
    const w = this.worker
    this.worker = undefined
    this.running?.done()
    this.running = undefined
    if (w !== undefined) void w.terminate()
  }
}

/** One rebuild in a thread of its own, ended after it. */
export async function applyPatchOffThread(o: ApplyPatchOptions): Promise<AppliedPatch> {
  const thread = new PatchThread()
  try {
    return await thread.apply(o)
  } finally {
    await thread.close()
  }
}
