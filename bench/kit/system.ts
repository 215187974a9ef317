/**
 * Processes, tools and machine facts for the benchmark suite: timed child processes
 * (wall time from here, peak RSS and CPU from GNU time), installing Debian peers with
 * apt-get when missing, free loopback ports, CPU pinning.
 */
import { execFile, execFileSync, spawn, spawnSync } from 'node:child_process'
import { createReadStream, existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { createServer } from 'node:net'
import { cpus, tmpdir, totalmem } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'

const execFileP = promisify(execFile)

export const log = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`)

export function which(bin: string): string | undefined {
  for (const dir of (process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin').split(':').concat(['/usr/sbin', '/sbin'])) {
    const p = join(dir, bin)
    if (dir && existsSync(p)) return p
  }
  return undefined
}

let aptUpdated = false

/**
 * Makes sure `bins` exist, installing Debian `packages` with apt-get when one is missing.
 * Returns undefined when everything is there, else the reason it could not be installed.
 */
export async function ensureDebian(bins: readonly string[], packages: readonly string[]): Promise<string | undefined> {
  const missing = () => bins.filter((b) => which(b) === undefined)
  if (missing().length === 0) return undefined
  if (process.platform !== 'linux' || which('apt-get') === undefined)
    return `${missing().join(', ')} not found and apt-get is not available`
  if (typeof process.getuid === 'function' && process.getuid() !== 0) {
    return `${missing().join(', ')} not found; run as root or: apt-get install ${packages.join(' ')}`
  }
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  const install = () =>
    execFileP('apt-get', ['install', '-y', '-q', '--no-install-recommends', ...packages], { env, maxBuffer: 64 << 20, timeout: 600_000 })
  log(`installing Debian packages ${packages.join(' ')} (apt-get)`)
  try {
    await install()
  } catch (first) {
    if (aptUpdated) return `apt-get install ${packages.join(' ')} failed: ${firstLine(first)}`
    try {
      aptUpdated = true
      await execFileP('apt-get', ['update', '-q'], { env, maxBuffer: 64 << 20, timeout: 600_000 })
      await install()
    } catch (err) {
      return `apt-get install ${packages.join(' ')} failed: ${firstLine(err)}`
    }
  }
  const still = missing()
  return still.length === 0 ? undefined : `${still.join(', ')} still missing after apt-get install ${packages.join(' ')}`
}

function firstLine(err: unknown): string {
  const e = err as { stderr?: string; message?: string }
  const text = (e.stderr && e.stderr.trim()) || e.message || String(err)
  const lines = text.split('\n').filter((l) => l.trim() !== '')
  return (lines.find((l) => /^E:/.test(l)) ?? lines[lines.length - 1] ?? text).slice(0, 300)
}

/** A loopback port free right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.unref()
    srv.once('error', reject)
    srv.listen({ host: '127.0.0.1', port: 0 }, () => {
      const addr = srv.address()
      const port = typeof addr === 'object' && addr ? addr.port : 0
      srv.close(() => resolve(port))
    })
  })
}

/** `taskset -c <cpu>` prefix when taskset exists and the machine has more than one core. */
export function pinArgs(cpu: number | undefined): string[] {
  if (cpu === undefined || cpus().length < 2 || which('taskset') === undefined) return []
  return ['taskset', '-c', String(cpu % cpus().length)]
}

export interface TimedResult {
  readonly wallSecs: number
  /** Peak RSS of the process (GNU time %M), in bytes; NaN without /usr/bin/time. */
  readonly maxRssBytes: number
  readonly userSecs: number
  readonly sysSecs: number
  readonly stdout: string
  readonly stderr: string
}

/** Make sure GNU time is there (Debian package `time`); peak RSS needs it. */
export async function ensureGnuTime(): Promise<string | undefined> {
  if (existsSync('/usr/bin/time')) return undefined
  return ensureDebian(['time'], ['time'])
}

/**
 * Runs a command to completion under /usr/bin/time (when present) and measures its wall
 * time from here. Rejects on a non-zero exit (with the tail of stderr) or on timeout.
 */
export async function runTimed(
  cmd: string,
  args: readonly string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number; stdinFile?: string; cpu?: number } = {},
): Promise<TimedResult> {
  const timeFile = join(tmpdir(), `rostore-bench-time-${process.pid}-${Math.random().toString(36).slice(2)}`)
  const gnuTime = existsSync('/usr/bin/time')
  const argv = [...pinArgs(opts.cpu), ...(gnuTime ? ['/usr/bin/time', '-f', '%M %U %S', '-o', timeFile] : []), cmd, ...args]
  const [bin, ...rest] = argv as [string, ...string[]]
  const started = performance.now()
  const { code, signal, stdout, stderr } = await new Promise<{
    code: number | null
    signal: string | null
    stdout: string
    stderr: string
  }>((resolve, reject) => {
    const child = spawn(bin, rest, {
      cwd: opts.cwd,
      env: opts.env ?? process.env,
      stdio: [opts.stdinFile ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    })
    const out: Buffer[] = []
    const err: Buffer[] = []
    child.stdout?.on('data', (c: Buffer) => out.push(c))
    child.stderr?.on('data', (c: Buffer) => {
      err.push(c)
      if (err.length > 2000) err.splice(0, 1000)
    })
    if (opts.stdinFile && child.stdin) {
      createReadStream(opts.stdinFile).on('error', reject).pipe(child.stdin)
      child.stdin.on('error', () => undefined)
    }
    const timer = opts.timeoutMs ? setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs) : undefined
    child.on('error', reject)
    child.on('close', (c, s) => {
      if (timer) clearTimeout(timer)
      resolve({ code: c, signal: s, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') })
    })
  })
  const wallSecs = (performance.now() - started) / 1000
  let maxRssBytes = NaN
  let userSecs = NaN
  let sysSecs = NaN
  if (gnuTime && existsSync(timeFile)) {
    const text = readFileSync(timeFile, 'utf8').trim().split('\n').pop() ?? ''
    const [m, u, s] = text.split(/\s+/).map(Number)
    maxRssBytes = (m ?? NaN) * 1024
    userSecs = u ?? NaN
    sysSecs = s ?? NaN
    rmSync(timeFile, { force: true })
  }
  if (code !== 0) {
    const tail = stderr.trim().split('\n').slice(-15).join('\n')
    throw new Error(`${cmd} ${args.join(' ').slice(0, 300)} exited with ${code ?? signal}:\n${tail}`)
  }
  return { wallSecs, maxRssBytes, userSecs, sysSecs, stdout, stderr }
}

/** Flush dirty pages so one run's writeback does not land in the next run's time. */
export async function syncDisks(): Promise<void> {
  try {
    await execFileP('sync', [])
  } catch {
    // not fatal
  }
}

/** Total size in bytes of the files under `path` (a file or a directory tree). */
export function duBytes(path: string): number {
  const st = statSync(path)
  if (!st.isDirectory()) return st.size
  let total = 0
  for (const e of readdirSync(path)) total += duBytes(join(path, e))
  return total
}

/** CPU seconds (user + system) a process has used so far, from /proc; NaN elsewhere. */
/**
 * CPU seconds of a process and its live descendants (a node's supervisor and its serving
 * workers): /proc/<pid>/task/<tid>/children, walked down.
 */
export function treeCpuSeconds(pid: number): number {
  let sum = cpuSecondsOf(pid)
  for (const child of childrenOf(pid)) sum += treeCpuSeconds(child)
  return sum
}

function childrenOf(pid: number): number[] {
  try {
    const out: number[] = []
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const text = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim()
      if (text !== '') out.push(...text.split(' ').map(Number))
    }
    return out
  } catch {
    return []
  }
}

export function cpuSecondsOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const ticks = 100 // USER_HZ on Linux
    return (Number(fields[11]) + Number(fields[12])) / ticks
  } catch {
    return NaN
  }
}

/** VmRSS / VmHWM of a process from /proc, in bytes (NaN elsewhere). */
export function memoryOf(pid: number): { rss: number; hwm: number } {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8')
    const kb = (name: string): number => {
      const m = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)
      return m ? Number(m[1]) * 1024 : NaN
    }
    return { rss: kb('VmRSS'), hwm: kb('VmHWM') }
  } catch {
    return { rss: NaN, hwm: NaN }
  }
}

export interface MachineFacts {
  readonly cpuModel: string
  readonly cores: number
  readonly memGiB: number
  readonly node: string
  readonly kernel: string
  readonly os: string
  readonly date: string
}

export function machineFacts(): MachineFacts {
  const c = cpus()
  let os = process.platform as string
  try {
    os = /^PRETTY_NAME="?([^"\n]*)"?/m.exec(readFileSync('/etc/os-release', 'utf8'))?.[1] ?? os
  } catch {
    // keep platform
  }
  let kernel: string
  try {
    kernel = execFileSync('uname', ['-r'], { encoding: 'utf8' }).trim()
  } catch {
    kernel = 'unknown'
  }
  return {
    cpuModel: c[0]?.model ?? 'unknown',
    cores: c.length,
    memGiB: totalmem() / 2 ** 30,
    node: process.version,
    kernel,
    os,
    date: new Date().toISOString(),
  }
}

/** Version line of a tool (first line of `bin args`), or undefined. */
export function toolVersion(bin: string, args: readonly string[]): string | undefined {
  try {
    const r = spawnSync(bin, args, { encoding: 'utf8', timeout: 5000 })
    const text = `${r.stdout ?? ''}${r.stderr ?? ''}`.trim()
    return text.split('\n')[0]?.slice(0, 120) || undefined
  } catch {
    return undefined
  }
}
