import { mkdir, readdir } from 'node:fs/promises'
import { errorMessage } from '../common/errors'
import { isSafeName } from '../formats/store/layout'
import { silentLogger, type SwapHooks, type SwapLogger } from './events'
import { StoreVersions, type OpenReader, type VerifyDir } from './store-versions'
import { checkStoreName } from './versions'

export interface DataDirOptions {
  readonly dir: string
  readonly nodeId?: number
  readonly keepVersions?: number
  readonly openReader?: OpenReader
  readonly verify?: VerifyDir
  readonly log?: SwapLogger
  readonly hooks?: SwapHooks
  /** Stores found at startup serve nothing until their `peersChecked()` (see StoreVersions). */
  readonly holdForPeers?: boolean
}

/**
 * A node's data directory: one `StoreVersions` per store directory under it. Stores
 * found at startup are recovered and opened; stores arriving later are created by their
 * first install or fetch (`getOrCreate`) or picked up by `rescan`.
 */
export class DataDir {
  private readonly stores = new Map<string, StoreVersions>()
  private readonly opening = new Map<string, Promise<StoreVersions>>()
  private readonly log: SwapLogger

  private constructor(private readonly opts: DataDirOptions) {
    this.log = opts.log ?? silentLogger
  }

  static async open(opts: DataDirOptions): Promise<DataDir> {
    await mkdir(opts.dir, { recursive: true })
    const dd = new DataDir(opts)
    await dd.scan(opts.holdForPeers ?? false)
    return dd
  }

  get dir(): string {
    return this.opts.dir
  }

  /** The store, when it is known. Synchronous: used on the request path. */
  get(store: string): StoreVersions | undefined {
    return this.stores.get(store)
  }

  all(): StoreVersions[] {
    return [...this.stores.values()].sort((a, b) => (a.store < b.store ? -1 : a.store > b.store ? 1 : 0))
  }

  /** The store, creating its directory when it does not exist yet. */
  async getOrCreate(store: string): Promise<StoreVersions> {
    checkStoreName(store)
    return this.stores.get(store) ?? this.openStore(store, true)
  }

  /** Open store directories that appeared since the last scan; returns their names. */
  rescan(): Promise<string[]> {
    return this.scan(false)
  }

  private async scan(holdForPeers: boolean): Promise<string[]> {
    const entries = await readdir(this.opts.dir, { withFileTypes: true })
    const added: string[] = []
    for (const e of entries) {
      if (!e.isDirectory() || this.stores.has(e.name) || this.opening.has(e.name)) continue
      if (!isSafeName(e.name)) {
        if (!e.name.startsWith('.')) this.log.warn('skipped-directory', { name: e.name, reason: 'not a valid store name' })
        continue
      }
      try {
        await this.openStore(e.name, false, holdForPeers)
        added.push(e.name)
      } catch (err) {
        this.log.error('store-open-failed', { store: e.name, error: errorMessage(err) })
      }
    }
    return added
  }

  async close(): Promise<void> {
    await Promise.all([...this.opening.values()].map((p) => p.catch(() => undefined)))
    await Promise.all(this.all().map((s) => s.close()))
  }

  private openStore(store: string, create: boolean, holdForPeers = false): Promise<StoreVersions> {
    const pending = this.opening.get(store)
    if (pending) return pending
    const p = StoreVersions.open({
      dataDir: this.opts.dir,
      store,
      create,
      nodeId: this.opts.nodeId,
      keepVersions: this.opts.keepVersions,
      openReader: this.opts.openReader,
      verify: this.opts.verify,
      log: this.log,
      hooks: this.opts.hooks,
      holdForPeers,
    })
      .then((sv) => {
        this.stores.set(store, sv)
        this.log.info('store-opened', { store, version: sv.liveVersion, versions: sv.versions() })
        return sv
      })
      .finally(() => this.opening.delete(store))
    this.opening.set(store, p)
    return p
  }
}
