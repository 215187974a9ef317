import { execFile, spawn } from 'node:child_process'
import { mkdtemp, open, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { promisify } from 'node:util'
import { StoreError } from '../../../common/errors'

/**
 * Where a Hadoop build reads its inputs (its output: output-location.ts). Two kinds of location:
 *
 * - a local path (or `file:` URI): the local file system, which on a cluster means a
 *   directory mounted at the same path on every task node (NFS, a FUSE mount of HDFS);
 * - any other URI (`hdfs://`, `viewfs://`, `s3a://`, ...): reached through the `hdfs dfs`
 *   command of the task node (`hdfs` on the PATH, or the job spec's `hdfsCommand`).
 *   Files are written locally first and then `-put` and `-mv`d into place.
 */
const run = promisify(execFile)

export function isRemote(path: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(path) && !/^file:/i.test(path)
}

/** A local path from a path or a file: URI. */
export function localPath(path: string): string {
  const m = /^file:(?:\/\/[^/]*)?(\/.*)$/i.exec(path)
  return m ? m[1]! : path
}

/** The path part of any path or URI (scheme and authority removed), for matching file names. */
export function uriPath(path: string): string {
  const m = /^[a-z][a-z0-9+.-]*:(?:\/\/[^/]*)?(\/.*)$/i.exec(path)
  return m ? m[1]! : path
}

export function hdfsCommand(spec?: { readonly hdfsCommand?: string }): string {
  return spec?.hdfsCommand ?? process.env['ROSTORE_HDFS_COMMAND'] ?? 'hdfs'
}

/** Runs `hdfs dfs <args>`; rejects with the command's stderr. */
export async function hdfsDfs(cmd: string, args: readonly string[]): Promise<string> {
  try {
    const { stdout } = await run(cmd, ['dfs', ...args], { maxBuffer: 256 << 20 })
    return stdout
  } catch (err) {
    const e = err as { code?: unknown; stderr?: string; message: string }
    if (e.code === 'ENOENT')
      throw new StoreError('RO_IO', `cannot run '${cmd}': not found (set ROSTORE_HDFS_COMMAND or put hdfs on the PATH)`, { cause: err })
    throw new StoreError('RO_IO', `${cmd} dfs ${args.join(' ')} failed: ${(e.stderr ?? '').trim() || e.message}`, { cause: err })
  }
}

export async function hdfsTest(cmd: string, flag: '-e' | '-d', path: string): Promise<boolean> {
  return run(cmd, ['dfs', '-test', flag, path]).then(
    () => true,
    (err: { code?: unknown }) => {
      if (err.code === 'ENOENT') throw new StoreError('RO_IO', `cannot run '${cmd}': not found`, { cause: err })
      return false
    },
  )
}

/** One entry of `hdfs dfs -ls`. */
export interface RemoteEntry {
  readonly path: string
  readonly name: string
  readonly size: number
  readonly dir: boolean
}

const LS_LINE = /^([-dl])\S*\s+\S+\s+\S+\s+\S+\s+(\d+)\s+\S+\s+\S+\s+(.+)$/

export async function hdfsList(cmd: string, path: string): Promise<RemoteEntry[]> {
  const out = await hdfsDfs(cmd, ['-ls', path])
  const entries: RemoteEntry[] = []
  for (const line of out.split('\n')) {
    const m = LS_LINE.exec(line)
    if (!m) continue
    entries.push({ dir: m[1] === 'd', size: Number(m[2]), path: m[3]!, name: basename(m[3]!) })
  }
  return entries
}

// ---------------------------------------------------------------- inputs

export interface ListedInput {
  readonly path: string
  readonly size: number
}

/**
 * Input files of remote inputs with the rules of listInputFiles: a file as given, a
 * directory as the regular files directly in it, by name, hidden ones skipped.
 */
export async function listRemoteInputs(cmd: string, inputs: readonly string[]): Promise<ListedInput[]> {
  const files: ListedInput[] = []
  const seen = new Set<string>()
  for (const input of inputs) {
    const isDir = await hdfsTest(cmd, '-d', input)
    if (!isDir && !(await hdfsTest(cmd, '-e', input)))
      throw new StoreError('RO_BAD_INPUT', `${input}: cannot read file: no such file or directory`)
    const entries = await hdfsList(cmd, input)
    const picked = isDir
      ? entries.filter((e) => !e.dir && !e.name.startsWith('.')).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      : entries.slice(0, 1)
    for (const e of picked) {
      // -ls prints paths without scheme and authority; keep the user's so tasks reach the same file system.
      const full = isDir ? `${input.replace(/\/+$/, '')}/${e.name}` : input
      if (seen.has(uriPath(full))) continue
      seen.add(uriPath(full))
      files.push({ path: full, size: e.size })
    }
  }
  return files
}

/** A local copy of an input for readers that need a file (Parquet, Arrow): the file itself when local. */
export async function fetchInput(cmd: string, path: string): Promise<{ local: string; release: () => Promise<void> }> {
  if (!isRemote(path)) return { local: localPath(path), release: async () => {} }
  const dir = await mkdtemp(join(tmpdir(), 'rostore-input-'))
  const local = join(dir, basename(uriPath(path)) || 'input')
  await hdfsDfs(cmd, ['-get', path, local])
  return { local, release: () => rm(dir, { recursive: true, force: true }) }
}

/** The first line of a file (without its line end), read from its start only. */
export async function readFirstLine(cmd: string, path: string, limit = 1 << 20): Promise<Buffer> {
  if (!isRemote(path)) {
    const fh = await open(localPath(path), 'r')
    try {
      const buf = Buffer.allocUnsafe(limit)
      const { bytesRead } = await fh.read(buf, 0, limit, 0)
      return firstLine(buf.subarray(0, bytesRead))
    } finally {
      await fh.close()
    }
  }
  return new Promise((resolvePromise, reject) => {
    const child = spawn(cmd, ['dfs', '-cat', path], { stdio: ['ignore', 'pipe', 'pipe'] })
    const parts: Buffer[] = []
    let size = 0
    let done = false
    let stderr = ''
    const finish = (): void => {
      if (done) return
      done = true
      child.kill()
      resolvePromise(firstLine(Buffer.concat(parts)))
    }
    child.stdout.on('data', (d: Buffer) => {
      parts.push(d)
      size += d.length
      if (d.includes(0x0a) || size >= limit) finish()
    })
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.on('error', (err) =>
      done ? undefined : ((done = true), reject(new StoreError('RO_IO', `cannot run '${cmd}': ${err.message}`, { cause: err }))),
    )
    child.on('close', (code) => {
      if (done) return
      if (code !== 0) {
        done = true
        reject(new StoreError('RO_IO', `${cmd} dfs -cat ${path} failed: ${stderr.trim()}`))
      } else finish()
    })
  })
}

export function firstLine(b: Buffer): Buffer {
  const nl = b.indexOf(0x0a)
  let line = nl >= 0 ? b.subarray(0, nl) : b
  if (line.length > 0 && line[line.length - 1] === 0x0d) line = line.subarray(0, line.length - 1)
  if (line.length >= 3 && line[0] === 0xef && line[1] === 0xbb && line[2] === 0xbf) line = line.subarray(3)
  return Buffer.from(line)
}
