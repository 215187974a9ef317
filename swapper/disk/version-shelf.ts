import { rename, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { errorMessage, StoreError } from '../../common/errors'
import type { StoreMetadata } from '../../formats/store/layout/metadata'
import { readNodeMetadata } from './install'
import { fsyncDir } from './live-pointer'
import { sortVersions, tmpName, trashName, versionDirName } from './version-names'

export interface VersionInfo {
  readonly version: number
  readonly live: boolean
  readonly records: number
  readonly sizeBytes: number
  readonly createdAt: string
  /** The ring the version routes by: a rollback to it goes back to this layout. */
  readonly layout: StoreMetadata['layout']
  readonly replication: number
  /** 1: a node directory; 2: partition files (a peer can serve them). */
  readonly formatMajor: number
}

export interface InstallResult {
  readonly store: string
  readonly version: number
  readonly records: number
  readonly sizeBytes: number
  readonly elapsedMs: number
}

/**
 * The version directories of one store on disk (`version-<V>/`, immutable once renamed in)
 * and their metadata, read once. Only the store's StoreVersions changes them, inside its
 * serial queue, so the set in memory is the directory's truth.
 */
export class VersionShelf {
  private readonly present = new Set<number>()
  private readonly metaCache = new Map<number, StoreMetadata>()

  constructor(
    readonly storeDir: string,
    private readonly store: string,
  ) {}

  /** The versions recovery found complete. */
  load(versions: readonly number[]): void {
    for (const v of versions) this.present.add(v)
  }

  /** Versions on disk, ascending. */
  versions(): number[] {
    return sortVersions(this.present)
  }

  has(version: number): boolean {
    return this.present.has(version)
  }

  dir(version: number): string {
    return join(this.storeDir, versionDirName(version))
  }

  /** Metadata once read, without reading (undefined before the first `metadata`). */
  cachedMetadata(version: number): StoreMetadata | undefined {
    return this.metaCache.get(version)
  }

  /** Metadata of a present version, read once (version directories are immutable). */
  async metadata(version: number): Promise<StoreMetadata> {
    const cached = this.metaCache.get(version)
    if (cached) return cached
    if (!this.present.has(version)) throw this.noSuchVersion(version)
    const meta = await readNodeMetadata(this.dir(version))
    this.metaCache.set(version, meta)
    return meta
  }

  async list(live: number | undefined): Promise<VersionInfo[]> {
    const out: VersionInfo[] = []
    for (const v of this.versions()) {
      try {
        const meta = await this.metadata(v)
        const st = await stat(this.dir(v))
        out.push({
          version: v,
          live: v === live,
          records: meta.records,
          sizeBytes: sizeOf(meta),
          createdAt: st.mtime.toISOString(),
          layout: meta.layout,
          replication: meta.replication,
          formatMajor: meta.formatMajor,
        })
      } catch (err) {
        // Deleted meanwhile by retention: not listed.
        if (this.present.has(v)) throw err
      }
    }
    return out
  }

  /** A fresh staging directory path inside the store directory (installs, fetches). */
  stagingPath(kind: string): string {
    return join(this.storeDir, tmpName(kind))
  }

  /** Rename a verified staging directory to `version-<V>`, durably; RO_CONFLICT if V exists. */
  async place(staging: string, meta: StoreMetadata): Promise<void> {
    if (this.present.has(meta.version)) throw this.exists(meta.version)
    try {
      await rename(staging, this.dir(meta.version))
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code === 'ENOTEMPTY' || code === 'EEXIST') throw this.exists(meta.version)
      throw new StoreError('RO_IO', `cannot rename ${staging}: ${errorMessage(err)}`, { cause: err })
    }
    await fsyncDir(this.storeDir)
    this.present.add(meta.version)
    this.metaCache.set(meta.version, meta)
  }

  /** Rename a version to `.trash-*` (gone from the shelf at once); the caller removes the path. */
  async trash(version: number): Promise<string> {
    const trash = join(this.storeDir, trashName(versionDirName(version)))
    await rename(this.dir(version), trash)
    this.present.delete(version)
    this.metaCache.delete(version)
    return trash
  }

  noSuchVersion(version: number): StoreError {
    return new StoreError('RO_NOT_FOUND', `store ${this.store} has no version ${version}`)
  }

  exists(version: number): StoreError {
    return new StoreError('RO_CONFLICT', `store ${this.store} already has version ${version}`)
  }
}

/** What an install or a fetch reports: the version it added and how long it took. */
export function installResult(meta: StoreMetadata, startedAt: number): InstallResult {
  return {
    store: meta.store,
    version: meta.version,
    records: meta.records,
    sizeBytes: sizeOf(meta),
    elapsedMs: performance.now() - startedAt,
  }
}

export function sizeOf(meta: StoreMetadata): number {
  return meta.files.reduce((n, f) => n + f.size, 0)
}
