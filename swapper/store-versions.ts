import { mkdir, rm } from 'node:fs/promises'
import { isAbsolute, join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { errorMessage, StoreError } from '../common/errors'
import type { StoreMetadata } from '../formats/store/layout/metadata'
import { crashPoint } from './disk/crash-points'
import { silentLogger, type SwapHooks, type SwapKind, type SwapLogger, type SwapResult } from './events'
import { readInstallMetadata, readNodeMetadata, stageNodeDir, type StageOptions } from './disk/install'
import { LocalServingStore } from './local-serving'
import { fsyncDir, writeLivePointer } from './disk/live-pointer'
import { defaultOpenReader } from './open-version'
import { recoverStoreDir } from './disk/recover'
import { RetentionScheduler } from './disk/retention'
import { SerialQueue } from './serial-queue'
import type { PushRecord } from './disk/push-record'
import { ServingMarks } from './serving-marks'
import type { ServingMirror } from './serving-mirror'
import type { StaleMark } from './disk/stale-mark'
import { DEFAULT_DRAIN_DEADLINE_MS, DEFAULT_KEEP_VERSIONS, defaultVerify, type StoreVersionsOptions, type VerifyDir } from './store-options'
import { checkStoreName, isValidVersion, previousVersion, retentionVictims } from './disk/version-names'
import { installResult, VersionShelf, type InstallResult, type VersionInfo } from './disk/version-shelf'

export { DEFAULT_DRAIN_DEADLINE_MS, DEFAULT_KEEP_VERSIONS, defaultVerify } from './store-options'
export type { StoreVersionsOptions, VerifyDir } from './store-options'
export type { OpenReader } from './open-version'
export type { StaleMark } from './disk/stale-mark'
export type { PushRecord } from './disk/push-record'

export type { InstallResult, VersionInfo } from './disk/version-shelf'
export { installResult, sizeOf } from './disk/version-shelf'

/**
 * The versions of one store on one node: the on-disk directories, the LIVE pointer, the
 * STALE marker, and the serving side it drives (`serving`: the readers, in this process
 * or in every serving worker). All changes (install, swap, rollback, delete, retention)
 * run one at a time per store; reads never wait for them.
 *
 * A freshly adopted version's reader is opened ahead of its swap (`prepare`): opening is
 * O(records) with a large index, so doing it first keeps the swap itself O(1). Swap: make
 * sure the new version is prepared, flip LIVE (write temp + fsync + rename + fsync dir),
 * then activate it on the serving side. The old reader stays open as the rollback target
 * (a rollback serves pages already mapped); the one it displaces closes once its in-flight
 * requests have released it (or the drain deadline cut them). Old versions beyond the retention
 * are deleted afterwards, off the request path.
 */
export class StoreVersions<M extends ServingMirror = LocalServingStore> {
  readonly storeDir: string
  private pointer: number | undefined
  /** The version directories on disk and their metadata. */
  private readonly shelf: VersionShelf
  /** STALE mark, startup hold, last push record: why reads may be refused. */
  private readonly marks: ServingMarks
  /** Versions this object asked the serving side to prepare and not yet activate. */
  private preparedAhead = new Set<number>()
  /** The version the last flip replaced, kept prepared by the serving side (keepRollbackTarget). */
  private rollbackTarget: number | undefined
  private readonly queue = new SerialQueue()
  private readonly retention: RetentionScheduler
  private closed = false
  private loadErrorMessage: string | undefined
  readonly keepVersions: number
  private readonly drainDeadlineMs: number
  private readonly verify: VerifyDir
  private readonly log: SwapLogger
  private readonly hooks: SwapHooks

  private constructor(
    private readonly opts: StoreVersionsOptions,
    /** The serving side of this store: what reads see. */
    readonly serving: M,
  ) {
    this.storeDir = join(opts.dataDir, opts.store)
    this.shelf = new VersionShelf(this.storeDir, opts.store)
    this.keepVersions = opts.keepVersions ?? DEFAULT_KEEP_VERSIONS
    if (!Number.isSafeInteger(this.keepVersions) || this.keepVersions < 0) {
      throw new RangeError(`keepVersions must be a non-negative integer, got ${this.keepVersions}`)
    }
    this.drainDeadlineMs = opts.drainDeadlineMs ?? DEFAULT_DRAIN_DEADLINE_MS
    this.verify = opts.verify ?? defaultVerify
    this.log = opts.log ?? silentLogger
    this.hooks = opts.hooks ?? {}
    this.marks = new ServingMarks(this.storeDir, opts.store, opts.nodeId, this.log)
    this.retention = new RetentionScheduler(
      async () => {
        // Most flips delete nothing (a swap between kept versions); they skip the wait,
        // which in a multi-process node is a round trip to every serving worker.
        if (this.retentionVictims().length === 0) return
        // Let requests still reading a replaced version finish before its files go.
        await this.serving.drained(this.drainDeadlineMs)
        await this.exclusive(() => this.applyRetention())
      },
      () => this.closed,
      (err) => this.log.error('retention-failed', { store: this.store, error: errorMessage(err) }),
    )
  }

  /**
   * Recover the store directory, then open its live version (if any) on the serving side:
   * `serving`, or by default a LocalServingStore reading in this process.
   */
  static open(opts: StoreVersionsOptions): Promise<StoreVersions<LocalServingStore>>
  static open<M extends ServingMirror>(opts: StoreVersionsOptions, serving: M): Promise<StoreVersions<M>>
  static async open(opts: StoreVersionsOptions, serving?: ServingMirror): Promise<StoreVersions<ServingMirror>> {
    checkStoreName(opts.store)
    const mirror =
      serving ??
      new LocalServingStore({ store: opts.store, nodeId: opts.nodeId, openReader: opts.openReader ?? defaultOpenReader, log: opts.log })
    const sv = new StoreVersions(opts, mirror)
    await mirror.attach()
    if (opts.create) await mkdir(sv.storeDir, { recursive: true })
    const rec = await recoverStoreDir(sv.storeDir)
    if (rec.removed.length > 0) sv.log.info('recovered', { store: sv.store, removed: rec.removed })
    if (rec.repaired) sv.log.warn('live-pointer-repaired', { store: sv.store, reason: rec.repaired })
    if (rec.incomplete.length > 0) {
      sv.log.warn('incomplete-versions', { store: sv.store, versions: rec.incomplete, reason: 'no metadata.json; ignored' })
    }
    sv.shelf.load(rec.versions)
    sv.pointer = rec.live
    await sv.marks.load(opts.holdForPeers ?? false)
    await sv.marks.publish(sv.pointer, sv.serving)
    if (rec.live !== undefined) {
      try {
        await mirror.activate(rec.live, sv.versionDir(rec.live))
        await sv.versionMetadata(rec.live)
      } catch (err) {
        sv.loadErrorMessage = errorMessage(err)
        await mirror.setLoadError(sv.loadErrorMessage)
        sv.log.error('open-live-failed', { store: sv.store, version: rec.live, error: sv.loadErrorMessage })
      }
    }
    // A crash between a flip and its retention may have left too many versions.
    sv.retention.schedule()
    return sv
  }

  get store(): string {
    return this.opts.store
  }

  /** The live version according to LIVE (even when its reader failed to open). */
  get liveVersion(): number | undefined {
    return this.pointer
  }

  /** Metadata of the live version (according to LIVE), once known. */
  get liveMetadata(): StoreMetadata | undefined {
    return this.pointer === undefined ? undefined : this.shelf.cachedMetadata(this.pointer)
  }

  /** Why the live version could not be opened at startup, if it could not. */
  get loadError(): string | undefined {
    return this.loadErrorMessage
  }

  /** Why reads of this store are refused (503), if they are: see ServingMarks. */
  get stale(): StaleMark | undefined {
    return this.marks.stale(this.pointer)
  }

  /** The version this node should serve by the last push record, when it serves another one. */
  get behind(): number | undefined {
    return this.marks.behind(this.pointer)
  }

  get pushRecord(): PushRecord | undefined {
    return this.marks.pushRecord
  }

  /**
   * Keep `record` (durably) if it is newer (higher seq) than the one kept; returns whether
   * the store now holds it. Whether the node is behind follows from it at once.
   */
  setPushRecord(record: PushRecord): Promise<boolean> {
    return this.exclusive(async () => {
      this.checkOpen()
      const applied = await this.marks.setPushRecord(record)
      await this.marks.publish(this.pointer, this.serving)
      if (applied) this.log.info('push-record', { store: this.store, ...record, behind: this.behind ?? null })
      return applied
    })
  }

  /** The peers were asked (or could not be): stop holding reads for that. */
  peersChecked(): Promise<void> {
    return this.exclusive(async () => {
      this.marks.peersChecked()
      await this.marks.publish(this.pointer, this.serving)
    })
  }

  /** Versions on disk, ascending (kept in memory: only this object changes the directory). */
  versions(): number[] {
    return this.shelf.versions()
  }

  /** Metadata of a present version, read once (version directories are immutable). */
  versionMetadata(version: number): Promise<StoreMetadata> {
    return this.shelf.metadata(version)
  }

  listVersions(): Promise<VersionInfo[]> {
    return this.shelf.list(this.pointer)
  }

  versionDir(version: number): string {
    return this.shelf.dir(version)
  }

  /**
   * Copy (or link) the node directory `src` into staging, verify it (checksums and
   * structure), check it belongs to this store and node, and rename it to
   * `version-<V>`. It does not go live: call swap().
   */
  async install(src: string, opts: StageOptions = {}): Promise<InstallResult> {
    const t0 = performance.now()
    this.checkOpen()
    if (!isAbsolute(src)) throw new StoreError('RO_BAD_REQUEST', 'the source directory must be an absolute path')
    const srcMeta = (await readInstallMetadata(src, this.opts.nodeId)).meta
    this.checkBelongs(srcMeta, src)
    if (this.shelf.has(srcMeta.version)) throw this.shelf.exists(srcMeta.version)
    const staging = this.shelf.stagingPath('install')
    try {
      await stageNodeDir(src, staging, opts, srcMeta.nodeId)
      crashPoint('install:staged')
      return installResult(await this.adopt(staging, { signal: opts.signal, expectVersion: srcMeta.version }), t0)
    } finally {
      await rm(staging, { recursive: true, force: true }).catch(() => undefined)
    }
  }

  /** A fresh staging directory path inside the store directory (for fetches). */
  stagingPath(kind: string): string {
    return this.shelf.stagingPath(kind)
  }

  /**
   * Verify a complete node directory staged inside the store directory and rename it
   * to `version-<V>`. The caller removes `staging` if this throws. `rebuilt`: files of
   * staging a patch rebuild checked as it wrote them (VerifyDir).
   */
  async adopt(
    staging: string,
    opts: { signal?: AbortSignal; expectVersion?: number; rebuilt?: ReadonlySet<string> } = {},
  ): Promise<StoreMetadata> {
    this.checkOpen()
    await this.verify(staging, opts.signal, opts.rebuilt)
    const meta = await readNodeMetadata(staging)
    this.checkBelongs(meta, staging)
    if (opts.expectVersion !== undefined && meta.version !== opts.expectVersion) {
      throw new StoreError('RO_CONFLICT', `the metadata changed during the install (version ${meta.version})`)
    }
    crashPoint('install:verified')
    await this.exclusive(async () => {
      if (opts.signal?.aborted) throw new StoreError('RO_ABORTED', 'cancelled')
      await this.shelf.place(staging, meta)
    })
    crashPoint('install:renamed')
    await this.prepare(meta.version)
    this.log.info('installed', { store: this.store, version: meta.version, records: meta.records })
    return meta
  }

  /** Make a present version live (also "roll forward" to a version rolled back from). */
  async swap(version: number): Promise<SwapResult> {
    if (!isValidVersion(version)) throw new StoreError('RO_BAD_REQUEST', 'version must be a positive integer')
    return this.exclusive(() => this.flip(version, 'swap'))
  }

  /**
   * Back to the newest version older than the live one, or to the named version. The
   * version rolled back from is kept, so a swap can go forward to it again.
   */
  rollback(to?: number): Promise<SwapResult> {
    return this.exclusive(async () => {
      const live = this.pointer
      if (live === undefined) throw new StoreError('RO_CONFLICT', `store ${this.store} has no live version to roll back from`)
      let target = to
      if (target === undefined) {
        target = previousVersion(this.versions(), live)
        if (target === undefined) {
          throw new StoreError('RO_CONFLICT', `store ${this.store} has no version older than the live version ${live} to roll back to`)
        }
      } else if (target === live) {
        throw new StoreError('RO_CONFLICT', `version ${target} of store ${this.store} is already live`)
      }
      return this.flip(target, 'rollback')
    })
  }

  /** Delete a version that is not live (rename to .trash-*, then remove). */
  deleteVersion(version: number): Promise<void> {
    return this.exclusive(async () => {
      if (!this.shelf.has(version)) throw this.shelf.noSuchVersion(version)
      if (version === this.pointer) {
        throw new StoreError('RO_CONFLICT', `version ${version} of store ${this.store} is live; swap or roll back first`)
      }
      await this.serving.discard(version)
      this.preparedAhead.delete(version)
      const trash = await this.shelf.trash(version)
      crashPoint('delete:trashed')
      await fsyncDir(this.storeDir)
      await rm(trash, { recursive: true, force: true })
      this.log.info('version-deleted', { store: this.store, version })
      this.hooks.onVersionsDeleted?.(this.store, [version])
    })
  }

  /** Mark the store stale (reads answer 503) or clear the mark; kept on disk as STALE. */
  setStale(reason: string | undefined): Promise<StaleMark | undefined> {
    return this.exclusive(async () => {
      const mark = await this.marks.setStale(reason)
      await this.marks.publish(this.pointer, this.serving)
      this.log.info(reason === undefined ? 'stale-cleared' : 'stale-set', { store: this.store, reason })
      return mark
    })
  }

  /** Resolves when no change and no retention is running or scheduled. */
  async idle(): Promise<void> {
    for (;;) {
      const change = this.queue.last
      const retention = this.retention.current
      await change
      await retention
      if (change === this.queue.last && retention === this.retention.current) return
    }
  }

  /** Stop accepting changes, wait for running ones, close the reader once drained. */
  async close(): Promise<void> {
    this.closed = true
    await this.idle()
    await this.serving.close()
  }

  /**
   * Opens a freshly adopted version's reader ahead of its swap; failure only costs speed.
   * Only the newest adopted version and the rollback target stay prepared (readers hold
   * memory and descriptors).
   */
  private async prepare(version: number): Promise<void> {
    await this.exclusive(async () => {
      if (this.closed || !this.shelf.has(version) || this.pointer === version) return
      try {
        await this.serving.prepare(version, this.versionDir(version))
      } catch (err) {
        this.log.warn('prepare-failed', { store: this.store, version, error: errorMessage(err) })
        return
      }
      const keep = new Set([version])
      if (this.rollbackTarget !== undefined && this.preparedAhead.has(this.rollbackTarget)) keep.add(this.rollbackTarget)
      for (const old of this.preparedAhead) if (!keep.has(old)) await this.serving.discard(old)
      this.preparedAhead = keep
    })
  }

  /**
   * The serving side keeps the reader a flip replaced open as the rollback target
   * (LocalServingStore.activate). Prepared from here on are that one and a version staged
   * ahead of the new live one (the newest install); older ones are let go.
   */
  private async keepRollbackTarget(from: number, live: number): Promise<void> {
    this.rollbackTarget = from
    this.preparedAhead.add(from)
    for (const v of [...this.preparedAhead]) {
      if (v === from || v > live) continue
      await this.serving.discard(v)
      this.preparedAhead.delete(v)
    }
  }

  // ---------------------------------------------------------------------------------

  private async flip(version: number, kind: SwapKind): Promise<SwapResult> {
    this.checkOpen()
    const t0 = performance.now()
    const from = this.pointer
    if (!this.shelf.has(version)) throw this.shelf.noSuchVersion(version)
    if (version === from && this.serving.activeVersion === version) {
      return { store: this.store, kind, from, to: version, changed: false, elapsedMs: 0, flipMs: 0 }
    }
    // Opened before the flip: a version that cannot be served never becomes live.
    await this.serving.prepare(version, this.versionDir(version))
    const t1 = performance.now()
    crashPoint('swap:opened')
    try {
      await writeLivePointer(this.storeDir, version)
    } catch (err) {
      if (!this.preparedAhead.has(version)) await this.serving.discard(version)
      throw err
    }
    crashPoint('swap:flipped')
    this.pointer = version
    this.loadErrorMessage = undefined
    // A version this node should not serve (behind a push) is refused before it serves; a
    // refusal the swap ends is lifted only once the right version serves.
    const refused = this.marks.stale(version) !== undefined
    if (refused) await this.marks.publish(this.pointer, this.serving)
    await this.serving.activate(version, this.versionDir(version))
    if (!refused) await this.marks.publish(this.pointer, this.serving)
    this.preparedAhead.delete(version)
    if (from !== undefined && from !== version) await this.keepRollbackTarget(from, version)
    const t2 = performance.now()
    const result: SwapResult = { store: this.store, kind, from, to: version, changed: true, elapsedMs: t2 - t0, flipMs: t2 - t1 }
    this.log.info(kind, { store: this.store, from, to: version, elapsedMs: round(result.elapsedMs) })
    this.hooks.onSwap?.(result)
    this.retention.schedule()
    return result
  }

  private checkBelongs(meta: StoreMetadata, dir: string): void {
    if (meta.store !== this.store) {
      throw new StoreError('RO_CONFLICT', `${dir} holds store ${JSON.stringify(meta.store)}, not ${JSON.stringify(this.store)}`)
    }
    if (this.opts.nodeId !== undefined && meta.nodeId !== this.opts.nodeId) {
      throw new StoreError('RO_CONFLICT', `${dir} was built for node ${meta.nodeId}, this is node ${this.opts.nodeId}`)
    }
  }

  private retentionVictims(): number[] {
    const live = this.pointer
    return live === undefined ? [] : retentionVictims(this.versions(), live, this.keepVersions)
  }

  private async applyRetention(): Promise<void> {
    const live = this.pointer
    const victims = this.retentionVictims()
    if (victims.length === 0) return
    const trashes: string[] = []
    for (const v of victims) {
      await this.serving.discard(v)
      this.preparedAhead.delete(v)
      trashes.push(await this.shelf.trash(v))
      crashPoint('retention:trashed')
    }
    await fsyncDir(this.storeDir)
    for (const t of trashes) await rm(t, { recursive: true, force: true })
    this.log.info('retention', { store: this.store, live, deleted: victims, kept: this.versions() })
    this.hooks.onVersionsDeleted?.(this.store, victims)
  }

  /** Run `fn` after every change queued before it; the queue survives failures. */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return this.queue.run(fn)
  }

  private checkOpen(): void {
    if (this.closed) throw new StoreError('RO_UNAVAILABLE', `store ${this.store} is shutting down`)
  }
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000
}
