import { Worker } from 'node:worker_threads'
import { errorFromCode } from '../../../common/errors'
import type { FromWorker, ToWorker } from './worker-protocol'

/**
 * One build worker thread with a request/reply call: one task in flight at a time,
 * progress messages forwarded, a worker error or exit rejects the pending call.
 */
export class WorkerHandle {
  private readonly worker: Worker
  private pending: { resolve: (m: FromWorker) => void; reject: (e: Error) => void; until: FromWorker['type'] } | undefined
  private dead: Error | undefined

  constructor(file: string, workerData: unknown, onProgress: (records: number, bytes: number) => void) {
    // The environment as the caller sees it now: S3 credentials set in-process reach the readers in the workers.
    this.worker = new Worker(file, { workerData, env: { ...process.env } })
    this.worker.on('message', (m: FromWorker) => {
      if (m.type === 'progress') return onProgress(m.records, m.bytes)
      const p = this.pending
      if (!p) return
      this.pending = undefined
      if (m.type === 'error') p.reject(errorFromCode(m.code, m.message))
      else if (m.type === p.until) p.resolve(m)
      else p.reject(new Error(`build worker answered ${m.type}, expected ${p.until}`))
    })
    const fail = (err: Error): void => {
      this.dead ??= err
      const p = this.pending
      this.pending = undefined
      p?.reject(err)
    }
    this.worker.on('error', fail)
    this.worker.on('exit', (code) => fail(new Error(`build worker exited with code ${code}`)))
  }

  request<T extends FromWorker['type']>(m: ToWorker, until: T): Promise<Extract<FromWorker, { type: T }>> {
    if (this.dead) return Promise.reject(this.dead)
    if (this.pending) return Promise.reject(new Error('build worker is busy'))
    return new Promise((resolve, reject) => {
      this.pending = { resolve: resolve as (m: FromWorker) => void, reject, until }
      this.worker.postMessage(m)
    })
  }

  async terminate(): Promise<void> {
    this.worker.removeAllListeners('exit')
    await this.worker.terminate()
  }
}
