/**
 * A project-local Python for tests and benchmarks that need an independent
 * implementation (pyarrow's C++ Arrow and Parquet writers, Ray...): a virtual environment
 * in `.venv/` at the repository root (gitignored), created on first use with the
 * machine's `python3`, with packages pip-installed when missing (pip works offline here
 * from the local index). Several test processes may ask at once: a lock directory makes
 * one of them do the work while the others wait for it.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, rmdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { packageRoot } from '../../common/paths'

export interface PythonOptions {
  /** Where the environment lives; default `.venv` at the repository root. */
  readonly venv?: string
  /** The interpreter that creates it; default `python3` (or $ROSTORE_PYTHON). */
  readonly basePython?: string
}

/** A lock older than this is from a process that died: taken over. */
const STALE_LOCK_MS = 15 * 60_000

function run(cmd: string, args: readonly string[], what: string): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20 })
  if (r.error !== undefined || r.status !== 0) {
    const detail = r.error?.message ?? `${r.stderr}${r.stdout}`.trim().split('\n').slice(-15).join('\n')
    throw new Error(`${what} failed (${cmd} ${args.join(' ')}):\n${detail}`)
  }
  return r.stdout
}

/** Packages of `wanted` (pip requirement names) that the environment lacks. */
function missing(python: string, wanted: readonly string[]): string[] {
  if (wanted.length === 0) return []
  const probe = [
    'import importlib.metadata as m, re, sys',
    'for req in sys.argv[1:]:',
    '    name = re.split(r"[<>=!~\\[ ]", req, maxsplit=1)[0]',
    '    try: m.version(name)',
    '    except m.PackageNotFoundError: print(req)',
  ].join('\n')
  return run(python, ['-c', probe, ...wanted], 'checking Python packages')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length > 0)
}

function withLock<T>(dir: string, work: () => T): T {
  const lock = `${dir}.lock`
  const wait = new Int32Array(new SharedArrayBuffer(4))
  for (;;) {
    try {
      mkdirSync(lock)
      break
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      const age = Date.now() - (statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now())
      if (age > STALE_LOCK_MS) rmdirSync(lock)
      else Atomics.wait(wait, 0, 0, 500) // another process is installing: wait for it
    }
  }
  try {
    return work()
  } finally {
    rmdirSync(lock)
  }
}

/**
 * The path of the environment's python, with `packages` installed (pip requirement
 * specifiers such as "pyarrow" or "pyarrow>=15"). Synchronous: meant for test setup.
 */
export function ensurePython(packages: readonly string[] = [], o: PythonOptions = {}): string {
  const venv = o.venv ?? join(packageRoot(__dirname), '.venv')
  const python = join(venv, 'bin', 'python')
  if (existsSync(python) && missing(python, packages).length === 0) return python
  return withLock(venv, () => {
    if (!existsSync(python))
      run(o.basePython ?? process.env['ROSTORE_PYTHON'] ?? 'python3', ['-m', 'venv', venv], 'creating the Python environment')
    const needed = missing(python, packages)
    if (needed.length > 0) run(python, ['-m', 'pip', 'install', '--quiet', ...needed], `pip install ${needed.join(' ')}`)
    return python
  })
}

/** Runs a Python script with arguments; returns its stdout, throws with its stderr on failure. */
export function runPython(python: string, script: string, args: readonly string[] = []): string {
  return run(python, ['-c', script, ...args], 'the Python script')
}
