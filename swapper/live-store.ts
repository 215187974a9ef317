import type { ServingReader } from '../formats/store/read/store-reader-api'

/**
 * The in-memory side of a swap. A `LiveStore` holds the reader of the live version of
 * one store, reference counted: a request acquires a lease (refcount + 1), reads, and
 * releases it when it has responded. A swap installs an already opened reader with
 * `replace()`: new requests get the new reader at once, requests holding a lease on the
 * old one finish on the old files, and the old reader closes when its last lease is
 * released. Acquire and replace are synchronous, so no request ever sees a mix of two
 * versions or a closed reader, and nothing on the read path takes a lock.
 *
 * A lease may carry a revoke callback (close the request's connection). `drained()` with
 * a deadline calls it for requests still reading a replaced version past the deadline:
 * a client that stops reading its response cannot hold old versions open forever.
 */
export interface ReaderLease {
  readonly reader: ServingReader
  readonly version: number
  /** Idempotent. */
  release(): void
}

class CountedReader {
  /** One reference belongs to the LiveStore while this reader is current. */
  private refs = 1
  private closed = false
  /** Revoke callbacks of the leases out that have one. */
  private readonly revocable = new Set<() => void>()
  readonly drained: Promise<void>
  private resolveDrained!: () => void

  constructor(
    readonly reader: ServingReader,
    private readonly onClose: (reader: ServingReader) => void,
  ) {
    this.drained = new Promise((resolve) => (this.resolveDrained = resolve))
  }

  get version(): number {
    return this.reader.metadata.version
  }

  lease(onRevoke: (() => void) | undefined): ReaderLease {
    this.refs++
    if (onRevoke) this.revocable.add(onRevoke)
    let released = false
    return {
      reader: this.reader,
      version: this.version,
      release: () => {
        if (released) return
        released = true
        if (onRevoke) this.revocable.delete(onRevoke)
        this.release()
      },
    }
  }

  release(): void {
    if (this.refs <= 0) throw new Error('reader released more often than acquired')
    this.refs--
    if (this.refs === 0) this.close()
  }

  /** Cut every request still reading this (replaced) reader, then close it. */
  revoke(): number {
    const cut = [...this.revocable]
    this.revocable.clear()
    for (const fn of cut) {
      try {
        fn()
      } catch {
        // a connection that is already gone
      }
    }
    // Leases without a callback (in-process readers) cannot be cut; revoked ones release
    // themselves when their connection closes. Either way nothing reads after this point
    // but code that holds the reader object, which stays safe to use (see ServingReader).
    this.close()
    return cut.length
  }

  private close(): void {
    if (this.closed) return
    this.closed = true
    this.onClose(this.reader)
    this.resolveDrained()
  }
}

export interface LiveStoreEvents {
  /**
   * A replaced reader's last lease was released: whether its owner keeps it open (a
   * rollback target served again later); otherwise it is closed now.
   */
  keepsReader?: (reader: ServingReader) => boolean
  /** An old reader was closed after its last lease was released. */
  onReaderClosed?: (version: number, err?: unknown) => void
  /** Requests still reading a replaced version were cut at the drain deadline. */
  onRevoked?: (version: number, requests: number) => void
}

export class LiveStore {
  private current: CountedReader | undefined
  /** Replaced readers whose leases are still out. */
  private readonly retiring = new Set<CountedReader>()

  private readonly noteClosed: (reader: ServingReader) => void

  constructor(
    readonly store: string,
    private readonly events: LiveStoreEvents = {},
  ) {
    this.noteClosed = (r) => {
      // The same reader may be current again (rolled back to while its old leases drained).
      if (r === this.current?.reader || this.events.keepsReader?.(r) === true) return
      let error: unknown
      try {
        r.close()
      } catch (err) {
        error = err
      }
      this.events.onReaderClosed?.(r.metadata.version, error)
    }
  }

  /** Whether `reader` is current or still serves in-flight requests of a replaced version. */
  holds(reader: ServingReader): boolean {
    if (this.current?.reader === reader) return true
    for (const r of this.retiring) if (r.reader === reader) return true
    return false
  }

  /**
   * The live reader itself, without a lease: for handing it over, or for a read that is
   * synchronous from here to its answer (the reader closes only after a replace(), which
   * cannot run in between). Anything that waits must acquire() instead.
   */
  get currentReader(): ServingReader | undefined {
    return this.current?.reader
  }

  /** The live version in memory, or undefined when nothing is served. */
  get version(): number | undefined {
    return this.current?.version
  }

  get metadata(): ServingReader['metadata'] | undefined {
    return this.current?.reader.metadata
  }

  /** Readers replaced but still serving in-flight requests. */
  get retiringCount(): number {
    return this.retiring.size
  }

  /**
   * A lease on the live reader, or undefined when the store has none. Synchronous.
   * `onRevoke` (close the request's connection) is called if the request still holds the
   * lease when a drain deadline passes after the version was replaced.
   */
  acquire(onRevoke?: () => void): ReaderLease | undefined {
    return this.current?.lease(onRevoke)
  }

  /**
   * Make `reader` current (or serve nothing with undefined). The previous reader closes
   * once its in-flight leases are released, unless its owner keeps it (keepsReader).
   * Returns a promise that resolves then.
   */
  replace(reader: ServingReader | undefined): Promise<void> {
    const old = this.current
    // The close callback is made once, outside this scope: a closure created here would
    // share V8's context with the one below that holds `old`, so every reader would keep
    // its predecessor reachable, and a node leaked one reader per swap (~70 KiB each).
    this.current = reader ? new CountedReader(reader, this.noteClosed) : undefined
    if (!old) return Promise.resolve()
    this.retiring.add(old)
    void old.drained.then(() => this.retiring.delete(old))
    old.release()
    return old.drained
  }

  /**
   * Every reader replaced so far has closed. With a deadline, requests still reading a
   * replaced reader when it passes are revoked (cut) and the reader closed.
   */
  async drained(deadlineMs?: number): Promise<void> {
    const all = Promise.all([...this.retiring].map((r) => r.drained)).then(() => undefined)
    if (deadlineMs === undefined || this.retiring.size === 0) return all
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), deadlineMs)
      timer.unref()
    })
    const outcome = await Promise.race([all, late])
    clearTimeout(timer)
    if (outcome !== 'late') return
    for (const r of [...this.retiring]) {
      const cut = r.revoke()
      this.events.onRevoked?.(r.version, cut)
    }
    await all
  }

  /** Stop serving; the reader closes when in-flight requests are done. */
  close(): Promise<void> {
    void this.replace(undefined)
    return this.drained()
  }
}
