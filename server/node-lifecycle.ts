import { JOB_PRIORITY_ENV } from '../common/job-priority'
import type { DataDir } from '../swapper/data-dir'
import type { ServingMirror } from '../swapper/serving-mirror'
import { AdminAuth, ReadAuth, warnAboutAuth } from './auth'
import { EventRing } from './console/event-ring'
import type { ControlServices } from './control-services'
import { listeningFields, type ListeningAt } from './listening-log'
import { createLogger, type Logger } from './log'
import type { NodeOptions, NodeSetup } from './node-options'

/**
 * The start and stop sequence both kinds of node share (single-node.ts: one process;
 * supervisor/supervisor.ts: a supervisor and its workers). What differs between them,
 * where reads are served and how they drain, is passed in.
 */

export interface NodeBasics {
  readonly events: EventRing
  readonly log: Logger
  readonly auth: AdminAuth
  readonly readAuth: ReadAuth
}

/** The event ring, the logger that feeds it, and the tokens, warned about when weak or missing. */
export function nodeBasics(opts: NodeOptions): NodeBasics {
  const events = new EventRing()
  const log = events.tap(opts.log ?? createLogger())
  const auth = new AdminAuth(opts.adminToken)
  const readAuth = new ReadAuth(opts.readToken, auth)
  warnAboutAuth(auth, opts.adminToken, log)
  return { events, log, auth, readAuth }
}

/**
 * Runs the node's jobs at its `--job-priority` (common/job-priority.ts): the job worker
 * threads (verify, patch rebuilds) lower themselves as they start. The process's other
 * threads keep their priority: V8's collector helpers are among them, and a main thread
 * waiting for a lowered helper on a busy machine stalls its event loop (a priority
 * inversion), and the workers a supervisor forks would inherit a lowered main thread's
 * priority for good.
 */
export function applyJobPriority(setup: NodeSetup, log: Logger): void {
  if (setup.jobPriority !== 'low') return
  process.env[JOB_PRIORITY_ENV] = 'low'
  log.info('job-priority', { priority: 'low', threads: 'verify and patch rebuild threads: nice 10, idle I/O class' })
}

/**
 * Called once the node listens: peers asking it get answers from then on, but its stores
 * serve only once the peer check has decided whether it missed a push.
 */
export async function announceListening(
  opts: NodeOptions,
  setup: NodeSetup,
  dd: DataDir<ServingMirror>,
  basics: NodeBasics,
  services: ControlServices,
  at: ListeningAt,
): Promise<void> {
  await services.peers.start()
  await services.resolver.start()
  basics.log.info('listening', listeningFields(opts, setup, dd, { admin: basics.auth, read: basics.readAuth }, at))
}

export interface NodeShutdown {
  readonly opts: NodeOptions
  readonly dd: DataDir<ServingMirror>
  readonly log: Logger
  readonly services: ControlServices
  /** Fields of the `shutdown-started` line. */
  readonly startedFields: Record<string, unknown>
  /** Marks the node as shutting down (its routes answer accordingly). */
  readonly markShuttingDown: () => void
  /** Stops the serving side within `timeoutMs`; true when it drained in time. */
  readonly drainServing: (timeoutMs: number) => Promise<boolean>
  /** Drained once serving has stopped and the jobs are cancelled (a supervisor's control socket); true when in time. */
  readonly drainLast?: () => Promise<boolean>
}

/**
 * The node's `close()`: idempotent. Serving drains while running jobs are cancelled; a job
 * stuck in a long file copy is not waited for past the drain timeout (its staging
 * directory is removed at the next start). The readers close last.
 */
export function nodeClose(s: NodeShutdown): () => Promise<boolean> {
  let closing: Promise<boolean> | undefined
  return () => {
    closing ??= (async () => {
      s.markShuttingDown()
      s.services.peers.close()
      s.services.resolver.close()
      s.log.info('shutdown-started', s.startedFields)
      const timeoutMs = s.opts.drainTimeoutMs ?? 30_000
      const [servingInTime] = await Promise.all([
        s.drainServing(timeoutMs),
        Promise.race([s.services.jobs.cancelAll().catch(() => undefined), new Promise((r) => setTimeout(r, timeoutMs).unref())]),
      ])
      const lastInTime = s.drainLast ? await s.drainLast() : true
      await s.dd.close()
      const inTime = servingInTime && lastInTime
      if (!inTime) s.log.warn('shutdown-drain-timeout', { drainTimeoutMs: timeoutMs })
      s.log.info('shutdown-complete', { drained: inTime })
      return inTime
    })()
    return closing
  }
}
