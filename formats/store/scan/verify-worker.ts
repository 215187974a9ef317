import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import { StoreError, errorFromCode } from '../../../common/errors'
import type { VerifyReport } from './verify'

type Answer = { ok: true; report: VerifyReport } | { ok: false; code?: string; message: string }

/**
 * verifyStore in a worker thread of its own. A full verify reads every byte of a version
 * and checks every record: seconds of CPU and synchronous reads for a store of a few
 * hundred MB. A serving node runs it here, so its event loop keeps answering reads while
 * it verifies a fetched or installed version. The CLI's
 * `rostore verify` and the tests call verifyStore itself. Cancelling (`signal`) terminates
 * the thread and rejects with RO_ABORTED; errors keep their StoreError code. `dropBehind`:
 * as verifyStore's (a version read once before it goes live); `rebuilt`: as verifyStore's.
 */
export function verifyStoreOffThread(
  dir: string,
  opts: { readonly signal?: AbortSignal; readonly dropBehind?: boolean; readonly rebuilt?: ReadonlySet<string> } = {},
): Promise<VerifyReport> {
  if (opts.signal?.aborted) return Promise.reject(new StoreError('RO_ABORTED', 'cancelled'))
  return new Promise((resolve, reject) => {
    const worker = new Worker(join(__dirname, 'verify-thread.js'), {
      workerData: { dir, dropBehind: opts.dropBehind === true, rebuilt: [...(opts.rebuilt ?? [])] },
    })
    let settled = false
    const settle = (fn: () => void): void => {
      if (settled) return
      settled = true
      opts.signal?.removeEventListener('abort', onAbort)
      fn()
      void worker.terminate()
    }
    const onAbort = (): void => settle(() => reject(new StoreError('RO_ABORTED', 'cancelled')))
    opts.signal?.addEventListener('abort', onAbort, { once: true })
    worker.once('message', (m: Answer) =>
      settle(() => {
        if (m.ok) resolve(m.report)
        else reject(errorFromCode(m.code, m.message))
      }),
    )
    // A thread that dies (out of memory, a bug) is no verdict on the files: a plain Error.
    worker.once('error', (err) => settle(() => reject(new Error(`verify of ${dir} failed: ${err.message}`, { cause: err }))))
    worker.once('exit', (code) => settle(() => reject(new Error(`verify of ${dir}: the worker exited with code ${code}`))))
  })
}
