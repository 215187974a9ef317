import cluster, { type Worker } from 'node:cluster'
import { ERROR_CODES, StoreError, type ErrorCode } from '../../common/errors'
import { Socket } from 'node:net'
import type { Logger } from '../log'
import { isHandOff, type HandOffMessage } from './stream-handoff'
import { isFromWorker, type FromWorker, type StoreSnapshot, type ToWorker, type WorkerCall, type WorkerConfig } from './protocol'
import { servingPoolEnv } from '../pool-threads'

export interface WorkerPoolOptions {
  readonly size: number
  /** The worker entry point (worker-main.js). */
  readonly exec: string
  readonly config: WorkerConfig
  /** The serving state a starting worker reproduces before it serves. */
  readonly snapshot: () => readonly StoreSnapshot[]
  readonly log: Logger
  /** A worker handed a client's connection over (stream-handoff.ts); without, such sockets are closed. */
  readonly onHandOff?: (message: HandOffMessage, socket: Socket) => void
}

interface Member {
  readonly index: number
  readonly worker: Worker
  /** init sent: calls from now on reach it, in order after the snapshot. */
  initSent: boolean
  serving: boolean
  exited: boolean
  readonly pending: Map<number, (value: unknown) => void>
  /** Resolves the fork's promise once the worker listens. */
  onReady?: () => void
}

/** Calls that take longer than this are a hung worker: it is killed and restarted. */
const CALL_TIMEOUT_MS = 120_000
/** Restarts within this window count towards the crash-loop backoff. */
const RESTART_WINDOW_MS = 60_000

/**
 * The serving workers of a node (node:cluster processes sharing the listening port). The
 * pool starts them, hands each the serving state to reproduce, fans calls out to all of
 * them, restarts one that dies (with a backoff when they crash in a loop), and stops them
 * on shutdown. A worker that dies while a call is out counts as having applied it: its
 * replacement starts from a snapshot taken after the change.
 */
export class WorkerPool {
  private readonly members = new Map<number, Member>()
  private nextCallId = 1
  private stopping = false
  private restarts = 0
  private recentExits: number[] = []
  private address: { host: string; port: number; respPort?: number } | undefined

  constructor(private readonly opts: WorkerPoolOptions) {}

  /** Fork every worker and wait until all listen; rejects if one dies first. */
  async start(): Promise<{ host: string; port: number; respPort?: number }> {
    cluster.setupPrimary({ exec: this.opts.exec, args: [], silent: false })
    const started = Array.from({ length: this.opts.size }, (_, i) => this.fork(i))
    try {
      await Promise.all(started)
    } catch (err) {
      this.stopping = true
      for (const m of this.members.values()) m.worker.process.kill('SIGKILL')
      throw err
    }
    if (!this.address) throw new StoreError('RO_IO', 'no serving worker reported its address')
    return this.address
  }

  /** The call, sent to every worker that has its snapshot; resolves with their answers. */
  call(call: WorkerCall): Promise<unknown[]> {
    const targets = [...this.members.values()].filter((m) => m.initSent && !m.exited)
    return Promise.all(targets.map((m) => this.callOne(m, call)))
  }

  status(): { configured: number; serving: number; restarts: number } {
    const serving = [...this.members.values()].filter((m) => m.serving && !m.exited).length
    return { configured: this.opts.size, serving, restarts: this.restarts }
  }

  /** Process ids of the live workers (tests kill one to see it replaced). */
  pids(): number[] {
    return [...this.members.values()].filter((m) => !m.exited).map((m) => m.worker.process.pid ?? -1)
  }

  /** Ask every worker to drain and exit; kill those still running after `timeoutMs`. True when all drained. */
  async shutdown(timeoutMs: number): Promise<boolean> {
    this.stopping = true
    const members = [...this.members.values()].filter((m) => !m.exited)
    const exits = members.map((m) => new Promise<void>((resolve) => (m.exited ? resolve() : m.worker.once('exit', () => resolve()))))
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), timeoutMs + 2000)))
    const answers = await Promise.race([Promise.all(members.map((m) => this.callOne(m, { op: 'shutdown' }))), late])
    const exited = await Promise.race([Promise.all(exits), late])
    clearTimeout(timer)
    for (const m of members) if (!m.exited) m.worker.process.kill('SIGKILL')
    return answers !== 'late' && exited !== 'late' && answers.every((a) => a === true)
  }

  private fork(index: number): Promise<void> {
    const worker = cluster.fork({ ROSTORE_WORKER_INDEX: String(index), ...servingPoolEnv() })
    const member: Member = { index, worker, initSent: false, serving: false, exited: false, pending: new Map() }
    this.members.set(worker.id, member)
    worker.on('message', (m: unknown, handle: unknown) => {
      if (isHandOff(m)) this.onHandOffMessage(m, handle)
      else if (isFromWorker(m)) this.onMessage(member, m)
    })
    // A send to a worker that just died reports through 'error'; its exit handles the rest.
    worker.on('error', (err) => this.opts.log.warn('worker-ipc-error', { index, error: err.message }))
    return new Promise<void>((resolve, reject) => {
      member.onReady = resolve
      worker.once('exit', (code, signal) => {
        if (!member.serving && this.address === undefined)
          reject(new StoreError('RO_IO', `serving worker ${index} exited while starting (code ${code}, signal ${signal})`))
        this.onExit(member, code, signal)
      })
    })
  }

  private onHandOffMessage(m: HandOffMessage, handle: unknown): void {
    if (!(handle instanceof Socket)) return
    if (this.opts.onHandOff && !this.stopping) this.opts.onHandOff(m, handle)
    else handle.destroy()
  }

  private onMessage(member: Member, m: FromWorker): void {
    switch (m.rostore) {
      case 'hello': {
        const init: ToWorker = { rostore: 'init', config: this.opts.config, stores: this.opts.snapshot() }
        member.initSent = true
        this.send(member, init)
        return
      }
      case 'ready':
        for (const [store, error] of Object.entries(m.loadErrors)) {
          this.opts.log.error('worker-open-live-failed', { index: member.index, store, error })
        }
        member.serving = true
        this.address ??= { host: m.host, port: m.port, ...(m.respPort === undefined ? {} : { respPort: m.respPort }) }
        this.opts.log.info('worker-serving', { index: member.index, pid: member.worker.process.pid })
        member.onReady?.()
        return
      case 'reply': {
        const done = member.pending.get(m.id)
        member.pending.delete(m.id)
        done?.(m.ok ? m.value : new StoreError(isCode(m.code) ? m.code : 'RO_IO', m.message))
        return
      }
    }
  }

  private callOne(member: Member, call: WorkerCall): Promise<unknown> {
    if (member.exited) return Promise.resolve(undefined)
    const id = this.nextCallId++
    return new Promise<unknown>((resolve, reject) => {
      const timeout = setTimeout(
        () => {
          this.opts.log.error('worker-hung', { index: member.index, op: call.op })
          member.worker.process.kill('SIGKILL')
        },
        call.op === 'drained' ? call.deadlineMs + CALL_TIMEOUT_MS : CALL_TIMEOUT_MS,
      )
      member.pending.set(id, (value) => {
        clearTimeout(timeout)
        if (value instanceof StoreError) reject(value)
        else resolve(value)
      })
      this.send(member, { rostore: 'call', id, call })
    })
  }

  private send(member: Member, message: ToWorker): void {
    if (member.exited || !member.worker.isConnected()) return
    member.worker.send(message, (err: Error | null) => {
      if (err) this.opts.log.warn('worker-send-failed', { index: member.index, error: err.message })
    })
  }

  private onExit(member: Member, code: number | null, signal: string | null): void {
    member.exited = true
    member.serving = false
    this.members.delete(member.worker.id)
    for (const done of member.pending.values()) done(undefined)
    member.pending.clear()
    if (this.stopping) return
    this.restarts++
    const now = Date.now()
    this.recentExits = [...this.recentExits.filter((t) => now - t < RESTART_WINDOW_MS), now]
    // Back off when workers keep dying, so a crash loop does not burn the machine.
    const delay = this.recentExits.length <= 3 ? 0 : Math.min(10_000, 250 * 2 ** (this.recentExits.length - 3))
    this.opts.log.error('worker-exited', { index: member.index, pid: member.worker.process.pid, code, signal, restartInMs: delay })
    setTimeout(() => {
      if (!this.stopping) void this.fork(member.index).catch(() => undefined)
    }, delay).unref()
  }
}

function isCode(code: string | undefined): code is ErrorCode {
  return (ERROR_CODES as readonly (string | undefined)[]).includes(code)
}
