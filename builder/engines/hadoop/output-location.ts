import { mkdir, mkdtemp, readdir, rename, rm, rmdir, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fsyncDir } from '../../../common/fs-durable'
import { hdfsCommand, hdfsDfs, hdfsList, hdfsTest, isRemote, localPath } from './job-fs'

/**
 * Where a Hadoop build writes its output: a local path (a directory mounted at the same
 * path on every task node) or a remote URI reached through `hdfs dfs` (files are written
 * locally first, then `-put` and `-mv`d into place).
 *
 * Commits are atomic per file: a reducer writes a chunk under
 * `<output>/_attempts/<attempt id>/node-<id>/` and then renames each file to
 * `<output>/node-<id>/` (partition files: `<output>/_attempts/<attempt id>/` to `<output>/`;
 * `nodeDir` '' below means the root). Attempts of one task write identical bytes, so a rerun attempt
 * may replace (local rename) or keep (HDFS, where a rename never overwrites) a file an
 * earlier attempt committed.
 */
export const ATTEMPTS_DIR = '_attempts'

export interface OutputLocation {
  readonly root: string
  readonly remote: boolean
  exists(): Promise<boolean>
  /** A local directory the chunk files of `attempt` for `nodeDir` are written into. */
  stage(attempt: string, nodeDir: string): Promise<string>
  /** Moves the staged files `names` into `<root>/<nodeDir>/`, one atomic rename each. */
  commit(staged: string, attempt: string, nodeDir: string, names: readonly string[]): Promise<void>
  /** name -> size of the files (not directories) in `<root>/<nodeDir>/` (empty when the directory is absent). */
  list(nodeDir: string): Promise<Map<string, number>>
  /** Names directly in the root. */
  children(): Promise<string[]>
  removeAttempts(): Promise<void>
}

export function outputLocation(root: string, spec?: { readonly hdfsCommand?: string }): OutputLocation {
  return isRemote(root) ? new RemoteOutput(root.replace(/\/+$/, ''), hdfsCommand(spec)) : new LocalOutput(resolve(localPath(root)))
}

class LocalOutput implements OutputLocation {
  readonly remote = false
  private readonly made = new Set<string>()

  constructor(readonly root: string) {}

  async exists(): Promise<boolean> {
    return stat(this.root).then(
      () => true,
      () => false,
    )
  }

  async stage(attempt: string, nodeDir: string): Promise<string> {
    const dir = join(this.root, ATTEMPTS_DIR, safeSegment(attempt), nodeDir)
    await mkdir(dir, { recursive: true })
    return dir
  }

  async commit(staged: string, _attempt: string, nodeDir: string, names: readonly string[]): Promise<void> {
    const dir = join(this.root, nodeDir)
    if (!this.made.has(dir)) {
      await mkdir(dir, { recursive: true })
      this.made.add(dir)
    }
    for (const name of names) await rename(join(staged, name), join(dir, name))
    await fsyncDir(dir)
  }

  async list(nodeDir: string): Promise<Map<string, number>> {
    const dir = join(this.root, nodeDir)
    const entries = await readdir(dir, { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return []
      throw err
    })
    const m = new Map<string, number>()
    for (const e of entries) if (e.isFile()) m.set(e.name, (await stat(join(dir, e.name))).size)
    return m
  }

  async children(): Promise<string[]> {
    return readdir(this.root).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return [] as string[]
      throw err
    })
  }

  async removeAttempts(): Promise<void> {
    await rm(join(this.root, ATTEMPTS_DIR), { recursive: true, force: true })
  }
}

class RemoteOutput implements OutputLocation {
  readonly remote = true
  private readonly made = new Set<string>()

  constructor(
    readonly root: string,
    private readonly cmd: string,
  ) {}

  exists(): Promise<boolean> {
    return hdfsTest(this.cmd, '-e', this.root)
  }

  async stage(attempt: string, nodeDir: string): Promise<string> {
    const dir = join(await mkdtemp(join(tmpdir(), `rostore-${safeSegment(attempt)}-`)), nodeDir)
    await mkdir(dir, { recursive: true })
    return dir
  }

  async commit(staged: string, attempt: string, nodeDir: string, names: readonly string[]): Promise<void> {
    const attemptDir = under(`${this.root}/${ATTEMPTS_DIR}/${safeSegment(attempt)}`, nodeDir)
    const finalDir = under(this.root, nodeDir)
    if (!this.made.has(attemptDir)) {
      await hdfsDfs(this.cmd, ['-mkdir', '-p', attemptDir, finalDir])
      this.made.add(attemptDir)
    }
    await hdfsDfs(this.cmd, ['-put', '-f', ...names.map((n) => join(staged, n)), attemptDir])
    try {
      await hdfsDfs(this.cmd, ['-mv', ...names.map((n) => `${attemptDir}/${n}`), finalDir])
    } catch (err) {
      // A rename never replaces a file in HDFS: an earlier attempt committed it, with the same bytes.
      for (const n of names) if (!(await hdfsTest(this.cmd, '-e', `${finalDir}/${n}`))) throw err
    }
    for (const n of names) await rm(join(staged, n), { force: true })
    // The staging directory (<tmp>/rostore-<attempt>-XXXXXX[/<node dir>]) once it is empty.
    await rmdir(staged)
      .then(
        () => (nodeDir === '' ? undefined : rmdir(dirname(staged))),
        () => undefined,
      )
      .catch(() => undefined)
  }

  async list(nodeDir: string): Promise<Map<string, number>> {
    const dir = under(this.root, nodeDir)
    const m = new Map<string, number>()
    if (!(await hdfsTest(this.cmd, '-d', dir))) return m
    for (const e of await hdfsList(this.cmd, dir)) if (!e.dir) m.set(e.name, e.size)
    return m
  }

  async children(): Promise<string[]> {
    if (!(await hdfsTest(this.cmd, '-d', this.root))) return []
    return (await hdfsList(this.cmd, this.root)).map((e) => e.name)
  }

  async removeAttempts(): Promise<void> {
    await hdfsDfs(this.cmd, ['-rm', '-r', '-f', '-skipTrash', `${this.root}/${ATTEMPTS_DIR}`])
  }
}

/** `dir` of a remote root, '' being the root itself. */
function under(root: string, dir: string): string {
  return dir === '' ? root : `${root}/${dir}`
}

/** Attempt ids become directory names. */
function safeSegment(s: string): string {
  return s.replace(/[^A-Za-z0-9_.-]/g, '_').replace(/^\.+/, '_') || '_'
}
