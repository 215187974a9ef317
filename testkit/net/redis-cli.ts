import { execFile, spawn } from 'node:child_process'
import { connect, type Socket } from 'node:net'
import Redis from 'ioredis'

/**
 * Real Redis clients against a RESP port, for tests: `redis-cli` (Debian redis-tools) as a
 * child process, a raw socket that sends exact bytes and collects what comes back, and ioredis.
 * Loopback only.
 */

export interface CliResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/**
 * Runs `redis-cli -h 127.0.0.1 -p <port> [flags] [args]` with `--no-raw` (typed output
 * even without a terminal: `(integer) 1`, `"value"`, `(nil)`, `(error) ...`), feeding
 * `stdin` when given. Bounded by `timeoutMs` (default 20 s).
 */
export function redisCli(
  port: number,
  args: readonly string[],
  opts: { flags?: readonly string[]; stdin?: string | Buffer; timeoutMs?: number; raw?: boolean } = {},
): Promise<CliResult> {
  const argv = ['-h', '127.0.0.1', '-p', String(port), opts.raw ? '--raw' : '--no-raw', ...(opts.flags ?? []), ...args]
  return new Promise((resolve, reject) => {
    const child = spawn('redis-cli', argv, { stdio: ['pipe', 'pipe', 'pipe'] })
    const out: Buffer[] = []
    const err: Buffer[] = []
    child.stdout.on('data', (c: Buffer) => out.push(c))
    child.stderr.on('data', (c: Buffer) => err.push(c))
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 20_000)
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') })
    })
    child.stdin.on('error', () => undefined)
    child.stdin.end(opts.stdin)
  })
}

/** stdout of one redis-cli command, trimmed; throws when redis-cli itself failed to run. */
export async function cli(port: number, ...args: string[]): Promise<string> {
  const r = await redisCli(port, args)
  if (r.code !== 0) throw new Error(`redis-cli ${args.join(' ')} exited ${r.code}: ${r.stderr}`)
  return r.stdout.trim()
}

/** Whether redis-cli exists (the tests need Debian's redis-tools). */
export function haveRedisCli(): Promise<boolean> {
  return new Promise((resolve) => execFile('redis-cli', ['--version'], (err) => resolve(!err)))
}

/** A raw connection: send bytes, wait until the received bytes satisfy a predicate or the server closes. */
export class RawConnection {
  private readonly chunks: Buffer[] = []
  private waiters: (() => void)[] = []
  closed = false
  readonly closedPromise: Promise<void>

  private constructor(readonly socket: Socket) {
    socket.on('data', (c: Buffer) => {
      this.chunks.push(c)
      this.wake()
    })
    socket.on('error', () => undefined)
    this.closedPromise = new Promise((resolve) =>
      socket.on('close', () => {
        this.closed = true
        this.wake()
        resolve()
      }),
    )
  }

  static open(port: number): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const s = connect({ host: '127.0.0.1', port })
      s.once('connect', () => resolve(new RawConnection(s)))
      s.once('error', reject)
    })
  }

  get received(): Buffer {
    return Buffer.concat(this.chunks)
  }

  get text(): string {
    return this.received.toString('latin1')
  }

  send(bytes: string | Buffer): void {
    this.socket.write(typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : bytes)
  }

  /** Resolves when `pred(text received so far)` holds or the connection closed; rejects after timeoutMs. */
  async until(pred: (text: string) => boolean, timeoutMs = 10_000): Promise<string> {
    const deadline = Date.now() + timeoutMs
    while (!pred(this.text) && !this.closed) {
      const left = deadline - Date.now()
      if (left <= 0) throw new Error(`no matching reply within ${timeoutMs} ms; got ${JSON.stringify(this.text.slice(0, 300))}`)
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left)
        this.waiters.push(() => {
          clearTimeout(t)
          resolve()
        })
      })
    }
    return this.text
  }

  close(): void {
    this.socket.destroy()
  }

  private wake(): void {
    const w = this.waiters
    this.waiters = []
    for (const f of w) f()
  }
}

/** An ioredis client of a RESP port on 127.0.0.1, connected, one try per command (tests fail fast). */
export async function connectIoredis(port: number): Promise<Redis> {
  const redis = new Redis({ host: '127.0.0.1', port, lazyConnect: true, enableReadyCheck: false, maxRetriesPerRequest: 1 })
  await redis.connect()
  return redis
}
