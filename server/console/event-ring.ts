import { isSafeName } from '../../formats/store/layout/layout'
import type { SwapResult } from '../../swapper/events'
import type { JobView } from '../jobs/jobs'
import type { Logger } from '../log'

export type EventLevel = 'info' | 'warn' | 'error'

/** One line of the console's "recent events": built here from checked fields, never from free text. */
export interface NodeEvent {
  /** Increases by one per new event of this node (the page merges nodes' lists by time). */
  readonly seq: number
  /** ISO time of the newest occurrence. */
  readonly at: string
  readonly level: EventLevel
  readonly kind: string
  readonly store: string | null
  readonly text: string
  /** Occurrences folded into this line (the same kind, store and text one after the other). */
  readonly count: number
}

type Fields = Readonly<Record<string, unknown>>

/** Log events the console shows, and how each reads; fields are checked, messages and paths never copied. */
/** A text of undefined: not worth a line (a peer check that went well). */
const FROM_LOG: Readonly<Record<string, { level: EventLevel; text: (f: Fields) => string | undefined }>> = {
  'job-started': { level: 'info', text: (f) => `${word(f['kind'])}${of(f['version'])} started` },
  installed: { level: 'info', text: (f) => `${v(f['version'])} verified and installed` },
  'push-record': { level: 'info', text: (f) => `push of ${v(f['version'])} recorded${missed(f['missed'])}` },
  'version-deleted': { level: 'info', text: (f) => `${v(f['version'])} deleted` },
  'repair-started': { level: 'warn', text: (f) => `repair to ${v(f['version'])} started` },
  repaired: { level: 'info', text: (f) => `repaired: ${v(f['version'])} live` },
  'repair-failed': { level: 'error', text: (f) => `repair to ${v(f['version'])} failed, retrying` },
  'repair-impossible': { level: 'error', text: (f) => `repair to ${v(f['version'])} impossible: no source` },
  'open-live-failed': { level: 'error', text: (f) => `live ${v(f['version'])} could not be opened` },
  'store-open-failed': { level: 'error', text: () => 'store could not be opened' },
  'live-pointer-repaired': { level: 'warn', text: () => 'live pointer repaired at start' },
  'drain-deadline': { level: 'warn', text: (f) => `${v(f['version'])}: ${num(f['requestsCut'])} slow requests cut after the swap` },
  'peer-check': {
    level: 'warn',
    text: (f) => (f['state'] === 'checked' ? undefined : `peer check ${word(f['state'])}: ${count(f['peersFailed'])} peers did not answer`),
  },
  'worker-exited': { level: 'error', text: (f) => `serving worker ${num(f['index'])} exited, restarting` },
  'worker-hung': { level: 'error', text: (f) => `serving worker ${num(f['index'])} did not answer` },
  'shutdown-started': { level: 'warn', text: () => 'node shutting down' },
}

/**
 * The node's recent events, in memory, bounded (the newest `capacity`): swaps, rollbacks,
 * jobs, repairs, worker restarts, corrupt reads and refused requests, for the console
 * (docs/API.md, "The console"). A restart forgets them; the log keeps everything.
 */
export class EventRing {
  private readonly items: NodeEvent[] = []
  private seq = 0

  constructor(private readonly capacity = 200) {}

  /** `log` that also records the events the console shows. */
  tap(log: Logger): Logger {
    const record = (event: string, fields: Fields | undefined): void => {
      const spec = FROM_LOG[event]
      const text = spec?.text(fields ?? {})
      if (spec && text !== undefined) this.add(spec.level, event, fields?.['store'], text)
    }
    const wrap = (inner: Logger): Logger => ({
      debug: (e, f) => inner.debug(e, f),
      info: (e, f) => (record(e, f), inner.info(e, f)),
      warn: (e, f) => (record(e, f), inner.warn(e, f)),
      error: (e, f) => (record(e, f), inner.error(e, f)),
      child: (f) => wrap(inner.child(f)),
    })
    return wrap(log)
  }

  swapped(r: SwapResult): void {
    if (!r.changed) return
    const from = r.from === undefined ? '' : ` (was ${v(r.from)})`
    if (r.kind === 'rollback') this.add('warn', 'rollback', r.store, `rolled back to ${v(r.to)}${from}`)
    else this.add('info', 'swap', r.store, `${v(r.to)} live${from} in ${Math.round(r.elapsedMs)} ms`)
  }

  jobFinished(j: JobView): void {
    const failed = j.state === 'failed'
    const code = failed && j.error ? ` (${j.error.code})` : ''
    this.add(failed ? 'error' : 'info', 'job-finished', j.store, `${word(j.kind)}${of(j.version)} ${j.state}${code}`)
  }

  /** Adds `times` occurrences of an event (folded into the newest line when that is the same event). */
  add(level: EventLevel, kind: string, store: unknown, text: string, at = new Date(), times = 1): void {
    const name = typeof store === 'string' && isSafeName(store) ? store : null
    const last = this.items[this.items.length - 1]
    if (last && last.kind === kind && last.store === name && last.text === text) {
      this.items[this.items.length - 1] = { ...last, at: at.toISOString(), count: last.count + times }
      return
    }
    this.items.push({ seq: ++this.seq, at: at.toISOString(), level, kind, store: name, text, count: times })
    if (this.items.length > this.capacity) this.items.splice(0, this.items.length - this.capacity)
  }

  /** The newest `max` events, newest last. */
  recent(max: number): NodeEvent[] {
    return this.items.slice(-max)
  }
}

function v(x: unknown): string {
  return typeof x === 'number' && Number.isSafeInteger(x) ? `v${x}` : 'a version'
}

/** " of v<N>" for a known version, else nothing. */
function of(x: unknown): string {
  return typeof x === 'number' && Number.isSafeInteger(x) ? ` of v${x}` : ''
}

function num(x: unknown): string {
  return typeof x === 'number' && Number.isFinite(x) ? String(x) : '?'
}

/** A short identifier-like word (a job kind, a state); anything else is not shown. */
function word(x: unknown): string {
  return typeof x === 'string' && /^[a-z][a-z-]{0,31}$/.test(x) ? x : '?'
}

function count(x: unknown): string {
  return Array.isArray(x) ? String(x.length) : typeof x === 'number' ? num(x) : '?'
}

function missed(x: unknown): string {
  if (!Array.isArray(x) || x.length === 0) return ''
  const ids = x.filter((n): n is number => typeof n === 'number' && Number.isSafeInteger(n)).slice(0, 16)
  return `; missed by node ${ids.join(', ')}`
}
