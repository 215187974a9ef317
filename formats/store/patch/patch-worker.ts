import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import { StoreError, errorFromCode, errorMessage } from '../../../common/errors'
import type { AppliedPatch, ApplyPatchOptions } from './patch-apply'

/** What the thread says (patch-thread.ts): a request for throttle tokens, or its one answer. */
export type PatchThreadMessage =
  | { readonly type: 'pace'; readonly bytes: number }
  | { readonly type: 'done'; readonly applied: AppliedPatch }
  | { readonly type: 'failed'; readonly code?: string; readonly message: string }

/** The options that cross to the thread (the throttle and the signal stay here). */
export type PatchThreadData = Omit<ApplyPatchOptions, 'pace' | 'signal'>

/**
 * applyPatch in a worker thread of its own. A rebuild reads a partition of the base and
 * writes one as large, through the builder's synchronous chunk writer: on a node that
 * serves from the same process, those calls would hold its event loop. The thread asks
 * this side for throttle tokens (`pace`) and waits for them. Cancelling terminates it and
 * rejects with RO_ABORTED; the caller removes the work directory either way. Errors keep
 * their StoreError code.
 */
export function applyPatchOffThread(o: ApplyPatchOptions): Promise<AppliedPatch> {
  if (o.signal?.aborted) return Promise.reject(new StoreError('RO_ABORTED', 'cancelled'))
  const { pace, signal, ...data } = o
  return new Promise((resolve, reject) => {
    const worker = new Worker(join(__dirname, 'patch-thread.js'), { workerData: data satisfies PatchThreadData })
    let settled = false
    const settle = (fn: () => void): void => {
      if (settled) return
      settled = true
      signal?.removeEventListener('abort', onAbort)
      fn()
      void worker.terminate()
    }
    const onAbort = (): void => settle(() => reject(new StoreError('RO_ABORTED', 'cancelled')))
    signal?.addEventListener('abort', onAbort, { once: true })
    worker.on('message', (m: PatchThreadMessage) => {
      if (m.type === 'pace') {
        void (pace ? pace(m.bytes) : Promise.resolve()).then(
          () => settled || worker.postMessage('paced'),
          (err: unknown) => settle(() => reject(err)),
        )
      } else if (m.type === 'done') settle(() => resolve(m.applied))
      else settle(() => reject(errorFromCode(m.code, m.message)))
    })
    // A thread that dies (out of memory, a bug) says nothing about the patch: a plain Error.
    worker.once('error', (err) =>
      settle(() => reject(new Error(`rebuild of partition ${o.partition}: ${errorMessage(err)}`, { cause: err }))),
    )
    worker.once('exit', (code) =>
      settle(() => reject(new Error(`rebuild of partition ${o.partition}: the worker exited with code ${code}`))),
    )
  })
}
