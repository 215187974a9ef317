import { randomUUID } from 'node:crypto'
import { errorMessage, isStoreError, StoreError, type ErrorCode } from '../../common/errors'
import { redactCredentials } from '../../common/redact'
import { errorDetail, nullLogger, type Logger } from '../log'

export type JobState = 'running' | 'succeeded' | 'failed' | 'cancelled'

export interface JobView {
  readonly id: string
  readonly kind: string
  readonly store: string
  /** The version the job brings in, when known as it starts (a fetch naming one, a repair). */
  readonly version?: number
  readonly state: JobState
  readonly createdAt: string
  readonly finishedAt?: string
  readonly progress?: unknown
  readonly result?: unknown
  readonly error?: { readonly code: ErrorCode; readonly message: string }
}

export interface JobContext {
  readonly signal: AbortSignal
  progress(p: unknown): void
}

interface Job {
  view: JobView
  readonly controller: AbortController
  readonly done: Promise<void>
}

const JOB_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

export function isJobId(id: string): boolean {
  return JOB_ID.test(id)
}

/**
 * Long admin operations (install, fetch) run as jobs: the request returns the job at
 * once (202) and the client polls GET /admin/jobs/<id>. Finished jobs are remembered
 * (the newest `maxFinished`); a node restart forgets them.
 */
export class Jobs {
  private readonly jobs = new Map<string, Job>()
  private readonly maxFinished: number
  private readonly maxRunning: number
  private readonly log: Logger
  private readonly onFinish: (view: JobView) => void

  constructor(opts: { maxFinished?: number; maxRunning?: number; log?: Logger; onFinish?: (view: JobView) => void } = {}) {
    this.maxFinished = opts.maxFinished ?? 200
    this.maxRunning = opts.maxRunning ?? 8
    this.log = opts.log ?? nullLogger
    this.onFinish = opts.onFinish ?? (() => undefined)
  }

  start(kind: string, store: string, run: (ctx: JobContext) => Promise<unknown>, version?: number): JobView {
    if (this.running().length >= this.maxRunning) {
      throw new StoreError('RO_CONFLICT', `${this.maxRunning} jobs are running already; try again later`)
    }
    const id = randomUUID()
    const controller = new AbortController()
    const job: Job = {
      view: { id, kind, store, ...(version === undefined ? {} : { version }), state: 'running', createdAt: new Date().toISOString() },
      controller,
      done: Promise.resolve(),
    }
    const ctx: JobContext = {
      signal: controller.signal,
      progress: (p) => {
        if (job.view.state === 'running') job.view = { ...job.view, progress: p }
      },
    }
    this.jobs.set(id, job)
    this.log.info('job-started', { job: id, kind, store, ...(version === undefined ? {} : { version }) })
    // run() starts synchronously, so a cancel right after start() is seen by its first check.
    ;(job as { done: Promise<void> }).done = new Promise<unknown>((resolve) => resolve(run(ctx))).then(
      (result) => this.finish(job, controller.signal.aborted ? 'cancelled' : 'succeeded', { result }),
      (err) => {
        const cancelled = controller.signal.aborted || isStoreError(err, 'RO_ABORTED')
        this.finish(
          job,
          cancelled ? 'cancelled' : 'failed',
          {
            error: {
              code: isStoreError(err) ? err.code : 'RO_INTERNAL',
              message: cancelled ? 'cancelled' : redactCredentials(errorMessage(err)),
            },
          },
          err,
        )
      },
    )
    return job.view
  }

  get(id: string): JobView | undefined {
    return this.jobs.get(id)?.view
  }

  list(): JobView[] {
    return [...this.jobs.values()].map((j) => j.view)
  }

  running(): JobView[] {
    return this.list().filter((j) => j.state === 'running')
  }

  /** Ask a running job to stop; it reaches "cancelled" at its next check. */
  cancel(id: string): JobView {
    const job = this.jobs.get(id)
    if (!job) throw new StoreError('RO_NOT_FOUND', `no job ${id}`)
    if (job.view.state !== 'running') throw new StoreError('RO_CONFLICT', `job ${id} is ${job.view.state}`)
    job.controller.abort()
    this.log.info('job-cancel-requested', { job: id })
    return job.view
  }

  /**
   * The job once it has ended, or as it is after `ms` if it is still running: a long poll,
   * so a client waiting for the end learns it when it happens rather than at its next poll.
   */
  async waitUpTo(id: string, ms: number): Promise<JobView> {
    const job = this.jobs.get(id)
    if (!job) throw new StoreError('RO_NOT_FOUND', `no job ${id}`)
    if (job.view.state !== 'running' || ms <= 0) return job.view
    let timer: NodeJS.Timeout | undefined
    await Promise.race([job.done, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))])
    clearTimeout(timer)
    return job.view
  }

  /** Wait for a job to finish (tests, shutdown). */
  async wait(id: string): Promise<JobView> {
    const job = this.jobs.get(id)
    if (!job) throw new StoreError('RO_NOT_FOUND', `no job ${id}`)
    await job.done
    return job.view
  }

  /** Cancel every running job and wait for all of them to settle. */
  async cancelAll(): Promise<void> {
    const running = [...this.jobs.values()].filter((j) => j.view.state === 'running')
    for (const j of running) j.controller.abort()
    await Promise.all(running.map((j) => j.done))
  }

  private finish(job: Job, state: JobState, extra: { result?: unknown; error?: JobView['error'] }, err?: unknown): void {
    job.view = { ...job.view, state, finishedAt: new Date().toISOString(), ...extra }
    this.log[state === 'failed' ? 'warn' : 'info']('job-finished', {
      job: job.view.id,
      kind: job.view.kind,
      store: job.view.store,
      state,
      error: extra.error?.message,
      // The job's message leaves out what a source sent; the log keeps it (errorDetail).
      ...(state === 'failed' ? { detail: errorDetail(err) } : {}),
    })
    this.onFinish(job.view)
    const finished = [...this.jobs.values()].filter((j) => j.view.state !== 'running')
    for (const old of finished.slice(0, Math.max(0, finished.length - this.maxFinished))) this.jobs.delete(old.view.id)
  }
}
