import { parentPort, workerData } from 'node:worker_threads'
import { errorMessage, isStoreError } from '../../../common/errors'
import { lowerIfJobThread } from '../../../common/job-priority'
import { applyPatch } from './patch-apply'
import type { PatchThreadData, PatchThreadMessage } from './patch-worker'

/**
 * Worker-thread entry of applyPatchOffThread (patch-worker.ts): one rebuild, its throttle
 * tokens asked of the parent one request at a time, answered with one message; the parent
 * then ends the thread.
 */
lowerIfJobThread()
const port = parentPort
if (port === null) throw new Error('patch-thread.js runs as a worker thread')
const send = (m: PatchThreadMessage): void => port.postMessage(m)
let paced: (() => void) | undefined
port.on('message', () => {
  const p = paced
  paced = undefined
  p?.()
})
applyPatch({
  ...(workerData as PatchThreadData),
  pace: (bytes) =>
    new Promise<void>((resolve) => {
      paced = resolve
      send({ type: 'pace', bytes })
    }),
}).then(
  (applied) => send({ type: 'done', applied }),
  (err: unknown) => send({ type: 'failed', ...(isStoreError(err) ? { code: err.code } : {}), message: errorMessage(err) }),
)
