import type { StoreReader } from '../formats/store/store-reader-api'

/**
 * The in-memory side of a swap. A `LiveStore` holds the reader of the live version of
 * one store, reference counted: a request acquires a lease (refcount + 1), reads, and
 * releases it when it has responded. A swap installs an already opened reader with
 * `replace()`: new requests get the new reader at once, requests holding a lease on the
 * old one finish on the old files, and the old reader closes when its last lease is
 * released. Acquire and replace are synchronous, so no request ever sees a mix of two
 * versions or a closed reader, and nothing on the read path takes a lock.
 */
export interface ReaderLease {
  readonly reader: StoreReader
  readonly version: number
  /** Idempotent. */
  release(): void
}

class CountedReader {
  /** One reference belongs to the LiveStore while this reader is current. */
  private refs = 1
  private closed = false
  readonly drained: Promise<void>
  private resolveDrained!: () => void

  constructor(
    readonly reader: StoreReader,
    private readonly onClose: (reader: StoreReader, err?: unknown) => void,
  ) {
    this.drained = new Promise((resolve) => (this.resolveDrained = resolve))
  }

  get version(): number {
    return this.reader.metadata.version
  }

  get inUse(): number {
    return this.refs
  }

  acquire(): void {
    this.refs++
  }

  release(): void {
    if (this.refs <= 0) throw new Error('reader released more often than acquired')
    this.refs--
    if (this.refs === 0 && !this.closed) {
      this.closed = true
      let error: unknown
      try {
        this.reader.close()
      } catch (err) {
        error = err
      }
      this.onClose(this.reader, error)
      this.resolveDrained()
    }
  }
}

export interface LiveStoreEvents {
  /** An old reader was closed after its last lease was released. */
  onReaderClosed?: (version: number, err?: unknown) => void
}

export class LiveStore {
  private current: CountedReader | undefined
  /** Replaced readers whose leases are still out. */
  private readonly retiring = new Set<CountedReader>()

  constructor(
    readonly store: string,
    private readonly events: LiveStoreEvents = {},
  ) {}

  /** The live version in memory, or undefined when nothing is served. */
  get version(): number | undefined {
    return this.current?.version
  }

  get metadata(): StoreReader['metadata'] | undefined {
    return this.current?.reader.metadata
  }

  /** Readers replaced but still serving in-flight requests. */
  get retiringCount(): number {
    return this.retiring.size
  }

  /** A lease on the live reader, or undefined when the store has none. Synchronous. */
  acquire(): ReaderLease | undefined {
    const counted = this.current
    if (!counted) return undefined
    counted.acquire()
    let released = false
    return {
      reader: counted.reader,
      version: counted.version,
      release: () => {
        if (released) return
        released = true
        counted.release()
      },
    }
  }

  /**
   * Make `reader` current (or serve nothing with undefined). The previous reader closes
   * once its in-flight leases are released. Returns a promise that resolves then.
   */
  replace(reader: StoreReader | undefined): Promise<void> {
    const old = this.current
    this.current = reader ? new CountedReader(reader, (r, err) => this.events.onReaderClosed?.(r.metadata.version, err)) : undefined
    if (!old) return Promise.resolve()
    this.retiring.add(old)
    void old.drained.then(() => this.retiring.delete(old))
    old.release()
    return old.drained
  }

  /** Every reader replaced so far has closed. */
  async drained(): Promise<void> {
    await Promise.all([...this.retiring].map((r) => r.drained))
  }

  /** Stop serving; the reader closes when in-flight requests are done. */
  close(): Promise<void> {
    void this.replace(undefined)
    return this.drained()
  }
}
