import type { EventRing } from './event-ring'

/** Counters of a node's metrics text the console turns into rates and events. */
export interface CounterSums {
  /** Keys this node looked up (HTTP gets and multi-gets, RESP reads answered here), per store. */
  readonly keysByStore: ReadonlyMap<string, number>
  /** HTTP requests answered 401 or 403. */
  readonly refused: number
  /** The node's resident memory (all its processes), when the process metrics are on. */
  readonly rssBytes: number | undefined
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g

/** Sums the few counters the console needs out of a Prometheus text exposition. */
export function sumCounters(text: string): CounterSums {
  const keysByStore = new Map<string, number>()
  let refused = 0
  let rssBytes: number | undefined
  for (const line of text.split('\n')) {
    if (!line.startsWith('rostore_keys_read_total') && !line.startsWith('rostore_resp_keys_total')) {
      if (!line.startsWith('rostore_requests_total') && !line.startsWith('process_resident_memory_bytes')) continue
    }
    const m = LINE.exec(line)
    if (!m) continue
    const value = Number(m[3])
    if (!Number.isFinite(value)) continue
    const labels = new Map<string, string>()
    for (const l of (m[2] ?? '').matchAll(LABEL)) labels.set(l[1] as string, l[2] as string)
    switch (m[1]) {
      case 'rostore_keys_read_total':
        add(keysByStore, labels.get('store') ?? '', value)
        break
      case 'rostore_resp_keys_total':
        // Keys another node answered are that node's reads.
        if (labels.get('source') !== 'forwarded') add(keysByStore, labels.get('store') ?? '', value)
        break
      case 'rostore_requests_total':
        if (labels.get('status') === '401' || labels.get('status') === '403') refused += value
        break
      case 'process_resident_memory_bytes':
        rssBytes = value
        break
    }
  }
  return { keysByStore, refused, rssBytes }
}

function add(map: Map<string, number>, key: string, value: number): void {
  map.set(key, (map.get(key) ?? 0) + value)
}

interface Sample {
  readonly t: number
  readonly keysByStore: ReadonlyMap<string, number>
}

/** Rates over this window (the newest sample against the oldest one still inside it). */
const WINDOW_MS = 10_000
const MAX_SAMPLES = 64

/**
 * Rates and counter events, computed when the console asks (nothing runs in the
 * background): read rates from the last samples, and an event when the refused requests or
 * a store's corrupt reads went up since the previous look.
 */
export class NodeSampler {
  private samples: Sample[] = []
  private refused = 0
  private readonly corrupt = new Map<string, number>()

  /** Keys read per second, in total and per store; null until two samples are a second apart. */
  sample(sums: CounterSums, now: number, events: EventRing): { total: number | null; byStore: ReadonlyMap<string, number> } {
    this.samples.push({ t: now, keysByStore: sums.keysByStore })
    this.samples = this.samples.filter((s) => s.t >= now - WINDOW_MS).slice(-MAX_SAMPLES)
    this.noteRefused(sums.refused, now, events)
    const first = this.samples[0] as Sample
    const dt = (now - first.t) / 1000
    if (dt < 1) return { total: null, byStore: new Map() }
    const byStore = new Map<string, number>()
    let total = 0
    for (const [store, n] of sums.keysByStore) {
      // A restarted worker starts its counters again: no negative rates.
      const rate = Math.max(0, (n - (first.keysByStore.get(store) ?? 0)) / dt)
      byStore.set(store, rate)
      total += rate
    }
    return { total, byStore }
  }

  /** The counters start at 0 with the node: the first look reports what was refused since then. */
  private noteRefused(value: number, now: number, events: EventRing): void {
    if (value > this.refused) {
      events.add('warn', 'refused', undefined, 'request refused: missing or wrong token', new Date(now), value - this.refused)
    }
    this.refused = value
  }

  /** An event when a store's corrupt reads went up; `at` is when the newest one happened. */
  noteCorrupt(store: string, count: number, code: string, at: string, events: EventRing): void {
    const prev = this.corrupt.get(store) ?? 0
    this.corrupt.set(store, count)
    if (count <= prev) return
    const when = new Date(at)
    const text = `corrupt read (${code}): clients read other replicas`
    events.add('error', 'corrupt-read', store, text, Number.isNaN(when.getTime()) ? new Date() : when, count - prev)
  }
}
