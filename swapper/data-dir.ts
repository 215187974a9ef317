import { mkdir, readdir, rmdir } from 'node:fs/promises'
import { join } from 'node:path'
import { errorMessage } from '../common/errors'
import { isSafeName } from '../formats/store/layout/layout'
import { silentLogger, type SwapHooks, type SwapLogger } from './events'
import type { LocalServingStore } from './local-serving'
import type { ServingMirror } from './serving-mirror'
import { StoreVersions, type OpenReader, type VerifyDir } from './store-versions'
import { checkStoreName } from './disk/version-names'

export interface DataDirOptions {
  readonly dir: string
  readonly nodeId?: number
  readonly keepVersions?: number
  readonly openReader?: OpenReader
  readonly verify?: VerifyDir
  readonly log?: SwapLogger
  readonly hooks?: SwapHooks
  readonly drainDeadlineMs?: number
  /** Stores found at startup serve nothing until their `peersChecked()` (see StoreVersions). */
  readonly holdForPeers?: boolean
}

/**
 * A node's data directory: one `StoreVersions` per store directory under it. Stores
 * found at startup are recovered and opened; stores arriving later are created by their
 * first install or fetch (`getOrCreate`) or picked up by `rescan`.
 */
export class DataDir<M extends ServingMirror = LocalServingStore> {
  private readonly stores = new Map<string, StoreVersions<M>>()
  private readonly opening = new Map<string, Promise<StoreVersions<M>>>()
  private readonly log: SwapLogger

  private constructor(
    private readonly opts: DataDirOptions,
    /** The serving side of each store; by default readers in this process. */
    private readonly serving: ((store: string) => M) | undefined,
  ) {
    this.log = opts.log ?? silentLogger
  }

  static open(opts: DataDirOptions): Promise<DataDir<LocalServingStore>>
  static open<M extends ServingMirror>(opts: DataDirOptions, serving: (store: string) => M): Promise<DataDir<M>>
  static async open(opts: DataDirOptions, serving?: (store: string) => ServingMirror): Promise<DataDir<ServingMirror>> {
    await mkdir(opts.dir, { recursive: true })
    const dd = new DataDir<ServingMirror>(opts, serving)
    await dd.scan(opts.holdForPeers ?? false)
    return dd
  }

  get dir(): string {
    return this.opts.dir
  }

  /** The store, when it is known. Synchronous: used on the request path. */
  get(store: string): StoreVersions<M> | undefined {
    return this.stores.get(store)
  }

  all(): StoreVersions<M>[] {
    return [...this.stores.values()].sort((a, b) => (a.store < b.store ? -1 : a.store > b.store ? 1 : 0))
  }

  /** The store, creating its directory when it does not exist yet. */
  async getOrCreate(store: string): Promise<StoreVersions<M>> {
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

  /**
   * Forgets a store that holds nothing (no version, no LIVE pointer, an empty directory)
   * and removes its directory, so that a store whose first install or fetch failed is not
   * listed forever. Returns false, changing nothing, when the store holds anything.
   */
  async dropIfEmpty(store: string): Promise<boolean> {
    const sv = this.stores.get(store)
    if (!sv || this.opening.has(store) || sv.versions().length > 0 || sv.liveVersion !== undefined || sv.stale) return false
    const dir = join(this.opts.dir, store)
    if ((await readdir(dir).catch(() => ['?'])).length > 0 || this.stores.get(store) !== sv) return false
    this.stores.delete(store)
    await sv.close()
    try {
      // rmdir, not rm -r: whatever appeared meanwhile is never deleted.
      await rmdir(dir)
    } catch (err) {
      this.log.warn('store-drop-failed', { store, error: errorMessage(err) })
      await this.openStore(store, false).catch(() => undefined)
      return false
    }
    this.log.info('store-dropped', { store, reason: 'nothing was installed' })
    return true
  }

  async close(): Promise<void> {
    await Promise.all([...this.opening.values()].map((p) => p.catch(() => undefined)))
    await Promise.all(this.all().map((s) => s.close()))
  }

  private openStore(store: string, create: boolean, holdForPeers = false): Promise<StoreVersions<M>> {
    const pending = this.opening.get(store)
    if (pending) return pending
    const opts = {
      dataDir: this.opts.dir,
      store,
      create,
      nodeId: this.opts.nodeId,
      keepVersions: this.opts.keepVersions,
      openReader: this.opts.openReader,
      verify: this.opts.verify,
      log: this.log,
      hooks: this.opts.hooks,
      drainDeadlineMs: this.opts.drainDeadlineMs,
      holdForPeers,
    }
    const opened = (this.serving ? StoreVersions.open(opts, this.serving(store)) : StoreVersions.open(opts)) as Promise<StoreVersions<M>>
    const p = opened
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
