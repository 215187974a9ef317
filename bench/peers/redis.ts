/**
 * Peer: Redis (Debian packages `redis-server` and `redis-tools`), the usual answer to
 * "serve key lookups over the network fast".
 *
 * Server: `redis-server` on a free loopback port, no persistence (`--save ''
 * --appendonly no`), pinned to one core like the rostore node it is compared with.
 * Loaded (untimed) with the same records through `redis-cli --pipe` from a RESP file of
 * SET commands written once under work/data.
 *
 * Load: `redis-benchmark` (C, pinned to the other core), 50 connections, no pipelining,
 * `-r` set so `__rand_int__` draws from 0..N/0.9: the same 12-digit keys as our data,
 * uniform, with the same 10% of absent keys as our uniform stream. Single gets are
 * `GET __rand_int__`; multi-gets are `MGET` with 100 `__rand_int__` arguments (each
 * drawn independently). Throughput and p50/p99 latency come from its CSV output.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { datasetId, ensureDataset, ensureDir, KEY_DIGITS, workRoot, writeDerived, type Dataset, type StreamKind } from '../kit/data'
import { runPacedLoad, type PacedResult } from '../load/paced-load'
import { ensureDebian, freePort, memoryOf, pinArgs, cpuSecondsOf, runTimed } from '../kit/system'

const execFileP = promisify(execFile)

export function ensureRedis(): Promise<string | undefined> {
  return ensureDebian(['redis-server', 'redis-cli', 'redis-benchmark'], ['redis-server', 'redis-tools'])
}

/** SET commands of every record in RESP, written once under work/data. */
export function ensureRespInput(ds: Dataset): string {
  const path = join(ensureDir(join(workRoot(), 'data')), `${datasetId(ds.shape, ds.seed)}.resp`)
  const v = ds.shape.valueBytes
  const head = Buffer.from(`*3\r\n$3\r\nSET\r\n$${KEY_DIGITS}\r\n`, 'latin1')
  const mid = Buffer.from(`\r\n$${v}\r\n`, 'latin1')
  const recBytes = head.length + KEY_DIGITS + mid.length + v + 2
  writeDerived(
    path,
    { kind: 'resp', records: ds.shape.records, valueBytes: v, seed: ds.seed, v: 1 },
    ds.shape,
    ds.seed,
    (rec, out, at) => {
      let p = at + head.copy(out, at)
      p += rec.copy(out, p, 0, KEY_DIGITS)
      p += mid.copy(out, p)
      p += rec.copy(out, p, KEY_DIGITS)
      out[p++] = 0x0d
      out[p++] = 0x0a
      return p - at
    },
    recBytes,
  )
  return path
}

export class RedisServer {
  private constructor(
    readonly port: number,
    readonly child: ChildProcess,
  ) {}

  /** `ioThreads` > 1 also turns on `io-threads-do-reads` (Redis 7 threads only writes without it). */
  static async start(dir: string, cpu: number | undefined, ioThreads = 1): Promise<RedisServer> {
    ensureDir(dir)
    const port = await freePort()
    const argv = [
      ...pinArgs(cpu),
      'redis-server',
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--protected-mode',
      'yes',
      '--save',
      '',
      '--appendonly',
      'no',
      '--daemonize',
      'no',
      '--dir',
      dir,
      '--logfile',
      join(dir, 'redis.log'),
      '--io-threads',
      String(ioThreads),
      ...(ioThreads > 1 ? ['--io-threads-do-reads', 'yes'] : []),
    ]
    const [bin, ...args] = argv as [string, ...string[]]
    const child = spawn(bin, args, { stdio: 'ignore' })
    const server = new RedisServer(port, child)
    const deadline = Date.now() + 15_000
    for (;;) {
      try {
        const { stdout } = await execFileP('redis-cli', ['-p', String(port), 'ping'], { timeout: 2000 })
        if (stdout.trim() === 'PONG') return server
      } catch {
        // not up yet
      }
      if (child.exitCode !== null || Date.now() > deadline) {
        server.stop()
        throw new Error(`redis-server did not start on port ${port} (see ${join(dir, 'redis.log')})`)
      }
      await new Promise((r) => setTimeout(r, 50))
    }
  }

  get pid(): number {
    return this.child.pid ?? -1
  }

  /** Loads a RESP file with redis-cli --pipe; returns seconds and the key count after it. */
  async load(respFile: string): Promise<{ secs: number; keys: number }> {
    const t = await runTimed('redis-cli', ['-p', String(this.port), '--pipe'], { stdinFile: respFile, timeoutMs: 3_600_000 })
    if (!/errors:\s*0\b/.test(t.stdout)) throw new Error(`redis-cli --pipe reported errors: ${t.stdout.trim().slice(-300)}`)
    return { secs: t.wallSecs, keys: await this.dbsize() }
  }

  async dbsize(): Promise<number> {
    const { stdout } = await execFileP('redis-cli', ['-p', String(this.port), 'dbsize'], { timeout: 10_000 })
    return Number(stdout.trim())
  }

  /** used_memory of INFO memory, bytes. */
  async usedMemory(): Promise<number> {
    const { stdout } = await execFileP('redis-cli', ['-p', String(this.port), 'info', 'memory'], { timeout: 10_000 })
    return Number(/^used_memory:(\d+)/m.exec(stdout)?.[1] ?? NaN)
  }

  rssBytes(): number {
    return memoryOf(this.pid).rss
  }

  cpuSeconds(): number {
    return cpuSecondsOf(this.pid)
  }

  stop(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL')
  }
}

export interface RedisBenchResult {
  readonly rps: number
  /** CPU seconds of the server during the run. */
  readonly cpuSecs: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly requests: number
  readonly secs: number
  /** CPU share of redis-server during the run (1 = one core busy). */
  readonly serverCpu: number
  /** CPU share of redis-benchmark itself. */
  readonly clientCpu: number
}

/** A server redis-benchmark can drive: Redis, or a rostore node's RESP port. */
export interface RespTarget {
  readonly port: number
  /** CPU seconds the server process(es) used so far. */
  cpuSeconds(): number
}

/**
 * One redis-benchmark run of `command` (e.g. ['GET', '__rand_int__']) with `requests`
 * requests from `clients` connections, keys drawn from 0..keyspace-1; `pipeline` commands
 * in flight per connection (-P, default 1).
 */
export async function redisBenchmark(
  server: RespTarget,
  command: readonly string[],
  opts: { requests: number; clients: number; keyspace: number; cpu?: number; timeoutMs: number; pipeline?: number },
): Promise<RedisBenchResult> {
  const cpu0 = server.cpuSeconds()
  const t = await runTimed(
    'redis-benchmark',
    [
      '-h',
      '127.0.0.1',
      '-p',
      String(server.port),
      '-c',
      String(opts.clients),
      '-n',
      String(opts.requests),
      '-r',
      String(opts.keyspace),
      ...(opts.pipeline && opts.pipeline > 1 ? ['-P', String(opts.pipeline)] : []),
      '--csv',
      ...command,
    ],
    { cpu: opts.cpu, timeoutMs: opts.timeoutMs },
  )
  const cpu = server.cpuSeconds() - cpu0
  const lines = t.stdout
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('"'))
  const header = parseCsvLine(lines[0] ?? '')
  const row = parseCsvLine(lines[lines.length - 1] ?? '')
  const col = (name: string): number => Number(row[header.indexOf(name)])
  const rps = col('rps')
  if (!(rps > 0)) throw new Error(`redis-benchmark printed no result: ${t.stdout.slice(0, 500)} ${t.stderr.slice(0, 500)}`)
  return {
    rps,
    cpuSecs: cpu,
    p50Ms: col('p50_latency_ms'),
    p99Ms: col('p99_latency_ms'),
    requests: opts.requests,
    secs: t.wallSecs,
    serverCpu: cpu / t.wallSecs,
    clientCpu: (t.userSecs + t.sysSecs) / t.wallSecs,
  }
}

function parseCsvLine(line: string): string[] {
  const out: string[] = []
  const re = /"((?:[^"]|"")*)"|([^,]+)/g
  let m: RegExpExecArray | null
  while ((m = re.exec(line))) out.push(m[1] !== undefined ? m[1].replace(/""/g, '"') : (m[2] ?? ''))
  return out
}

/**
 * Redis loaded with 1M × 1 KiB records (the dataset of section 3), as a tail-latency peer
 * run beside a node in the same seconds (4g's push rows, 4k's reads during a delta push);
 * or why it cannot run. `dirName`: its directory under the bench's work root.
 */
export interface LoadedRedis {
  readonly redis: RedisServer
  readonly records: number
}

export async function startLoadedRedis(dirName: string): Promise<LoadedRedis | string> {
  const missing = await ensureRedis()
  if (missing) return missing
  const records = 1_000_000
  const resp = ensureRespInput(ensureDataset({ name: '1M × 1024 B', records, valueBytes: 1024 }))
  const redis = await RedisServer.start(join(workRoot(), dirName), undefined)
  try {
    const loaded = await redis.load(resp)
    if (loaded.keys !== records) throw new Error(`Redis holds ${loaded.keys} keys after loading ${records}`)
  } catch (err) {
    redis.stop()
    throw err
  }
  return { redis, records }
}

/**
 * Paced GETs on the loaded peer for `secs` (the C generator over RESP, on core 0, the node's
 * load on the other); a failed request or an error reply rejects, naming `label`. Callers
 * start it beside the node's load and await it after: a rejection waits for that await
 * rather than ending the process as an unhandled one.
 */
export function pacedRedisGets(
  peer: LoadedRedis,
  o: { readonly rate: number; readonly connections: number; readonly secs: number; readonly kind: StreamKind; readonly label: string },
): Promise<PacedResult> {
  const job = { port: peer.redis.port, store: 'redis', records: peer.records, seed: 6, rate: o.rate, connections: o.connections }
  const run = runPacedLoad({ ...job, durationSec: o.secs, protocol: 'resp', kind: o.kind }, 0).then((r) => {
    if (r.errors > 0 || r.otherStatus > 0) throw new Error(`Redis peer, ${o.label}: ${r.errors} errors, ${r.otherStatus} error replies`)
    return r
  })
  run.catch(() => undefined)
  return run
}
