import { parentPort } from 'node:worker_threads'
import { errorMessage, isStoreError } from '../../../common/errors'
import { lowerIfJobThread } from '../../../common/job-priority'
import { applyPatch } from './patch-apply'
import type { PatchThreadMessage, PatchThreadRequest } from './patch-worker'

/**
 * Worker-thread entry of PatchThread (patch-worker.ts): rebuilds one at a time as the
 * parent asks, each answered with one message; throttle tokens asked of the parent one
 * request at a time. The parent ends the thread.
 */
lowerIfJobThread()
const port = parentPort
if (port === null) throw new Error('patch-thread.js runs as a worker thread')
const send = (m: PatchThreadMessage): void => port.postMessage(m)
let paced: (() => void) | undefined
port.on('message', (req: PatchThreadRequest) => {
  if (req.type === 'paced') {
    const p = paced
    paced = undefined
    p?.()
    return
  }
  applyPatch({
    ...req.data,
    pace: (bytes) =>
      new Promise<void>((resolve) => {
        paced = resolve
        send({ type: 'pace', bytes })
      }),
  }).then(
    (applied) => send({ type: 'done', applied }),
    (err: unknown) => send({ type: 'failed', ...(isStoreError(err) ? { code: err.code } : {}), message: errorMessage(err) }),
  )
})
