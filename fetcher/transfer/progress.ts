export type FileState = 'pending' | 'active' | 'done' | 'failed'

export interface FileProgress {
  readonly name: string
  readonly size: number
  /** Bytes of the file on disk so far (drops to 0 when a checksum failure restarts it). */
  readonly bytesDone: number
  readonly state: FileState
  readonly retries: number
}

export interface FetchProgress {
  readonly bytesDone: number
  readonly bytesTotal: number
  /** Received bytes per second over the last few seconds. */
  readonly rateBytesPerSec: number
  /** Seconds left at the current rate; null while the rate is unknown or zero. */
  readonly etaSeconds: number | null
  readonly files: readonly FileProgress[]
  readonly retries: number
  readonly checksumFailures: number
}

const RATE_WINDOW_MS = 5000
const SAMPLE_EVERY_MS = 100

interface MutableFile {
  name: string
  size: number
  bytesDone: number
  state: FileState
  retries: number
}

/**
 * Bookkeeping for one fetch's progress. Callbacks are rate-limited (`intervalMs`) because
 * they fire from the byte path; `final()` always reports, so a listener sees the end.
 */
export class ProgressTracker {
  private readonly files: MutableFile[]
  private readonly byName = new Map<string, MutableFile>()
  private readonly total: number
  private received = 0
  private retries = 0
  private checksumFailures = 0
  private samples: { t: number; received: number }[] = []
  private lastEmit = -Infinity

  constructor(
    files: readonly { readonly name: string; readonly size: number }[],
    private readonly onProgress?: (p: FetchProgress) => void,
    private readonly intervalMs = 200,
  ) {
    this.files = files.map((f) => ({ name: f.name, size: f.size, bytesDone: 0, state: 'pending', retries: 0 }))
    for (const f of this.files) this.byName.set(f.name, f)
    this.total = files.reduce((a, f) => a + f.size, 0)
    this.samples.push({ t: performance.now(), received: 0 })
  }

  private file(name: string): MutableFile {
    const f = this.byName.get(name)
    if (f === undefined) throw new RangeError(`no file ${name} in this fetch`)
    return f
  }

  setState(name: string, state: FileState): void {
    this.file(name).state = state
    this.maybeEmit()
  }

  /** The file's bytes on disk are now `bytesDone` (resume point, or 0 after a restart). */
  setBytes(name: string, bytesDone: number): void {
    this.file(name).bytesDone = bytesDone
    this.maybeEmit()
  }

  /** `n` bytes arrived from the source and were written. */
  addBytes(name: string, n: number): void {
    this.file(name).bytesDone += n
    this.received += n
    this.maybeEmit()
  }

  retry(name: string): void {
    this.file(name).retries++
    this.retries++
    this.maybeEmit()
  }

  checksumFailure(): void {
    this.checksumFailures++
  }

  private rate(now: number): number {
    const last = this.samples[this.samples.length - 1]
    if (last === undefined || now - last.t >= SAMPLE_EVERY_MS) this.samples.push({ t: now, received: this.received })
    while (this.samples.length > 2 && now - (this.samples[1]?.t ?? now) > RATE_WINDOW_MS) this.samples.shift()
    const first = this.samples[0]
    if (first === undefined) return 0
    const dt = (now - first.t) / 1000
    return dt > 0 ? (this.received - first.received) / dt : 0
  }

  snapshot(): FetchProgress {
    const rate = this.rate(performance.now())
    const bytesDone = this.files.reduce((a, f) => a + f.bytesDone, 0)
    const left = this.total - bytesDone
    return {
      bytesDone,
      bytesTotal: this.total,
      rateBytesPerSec: rate,
      etaSeconds: left <= 0 ? 0 : rate > 0 ? left / rate : null,
      files: this.files.map((f) => ({ ...f })),
      retries: this.retries,
      checksumFailures: this.checksumFailures,
    }
  }

  get counts(): { readonly retries: number; readonly checksumFailures: number } {
    return { retries: this.retries, checksumFailures: this.checksumFailures }
  }

  private maybeEmit(): void {
    if (this.onProgress === undefined) return
    const now = performance.now()
    if (now - this.lastEmit < this.intervalMs) return
    this.lastEmit = now
    this.emit()
  }

  private emit(): void {
    try {
      this.onProgress?.(this.snapshot())
    } catch {
      // A broken listener must not fail the fetch it only watches.
    }
  }

  final(): void {
    this.emit()
  }
}
