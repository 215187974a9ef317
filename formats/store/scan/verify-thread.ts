import { parentPort, workerData } from 'node:worker_threads'
import { errorMessage, isStoreError } from '../../../common/errors'
import { lowerIfJobThread } from '../../../common/job-priority'
import { verifyStore } from './verify'

/**
 * Worker-thread entry of verifyStoreOffThread (verify-worker.ts): one full verify of the
 * directory in workerData, answered with one message.
 */
lowerIfJobThread()
const { dir, dropBehind, rebuilt } = workerData as { dir: string; dropBehind: boolean; rebuilt: string[] }
verifyStore(dir, { dropBehind, rebuilt: new Set(rebuilt) }).then(
  (report) => parentPort?.postMessage({ ok: true, report }),
  (err: unknown) => parentPort?.postMessage({ ok: false, code: isStoreError(err) ? err.code : undefined, message: errorMessage(err) }),
)
