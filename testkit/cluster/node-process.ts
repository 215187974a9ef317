import { spawn, type ChildProcess } from 'node:child_process'
import { freePort } from '../../common/net'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http'
import { join } from 'node:path'
import { cliPath } from '../../common/paths'

/**
 * Real `rostore serve` child processes on loopback, for integration tests: start one node
 * (`startSingleNode`, `NodeProcess.start`) or a whole cluster (`startCluster` writes a
 * loopback cluster.json with free ports; `startClusterFromFile` uses yours), wait until it
 * listens, send it HTTP (`request`, `node.admin`, `node.install`, `node.waitJob`), kill -9
 * it, SIGTERM it, restart it on the same port. Every child's stderr (JSON log lines) is drained and kept, so a child never
 * blocks on a full pipe and a failing test can print what the node said.
 */

export const LOOPBACK = '127.0.0.1'

export interface ClusterNodeSpec {
  readonly id: number
  readonly host: string
  readonly port: number
  readonly respPort?: number
  readonly partitions: readonly number[]
}

export interface ClusterSpec {
  readonly name: string
  readonly nodes: readonly ClusterNodeSpec[]
}

export { freePort }

/**
 * Write a cluster.json of `nodes` nodes on loopback with free ports; partitions are dealt
 * round-robin (`partitionsPerNode` each). Returns the file path and the cluster.
 */
export async function writeClusterFile(
  dir: string,
  opts: { nodes?: number; partitionsPerNode?: number; name?: string; file?: string; ports?: readonly number[]; resp?: boolean } = {},
): Promise<{ path: string; cluster: ClusterSpec }> {
  const n = opts.nodes ?? 1
  const per = opts.partitionsPerNode ?? 2
  const nodes: ClusterNodeSpec[] = []
  for (let id = 0; id < n; id++) {
    const partitions: number[] = []
    for (let k = 0; k < per; k++) partitions.push(k * n + id)
    const port = opts.ports?.[id] ?? (await freePort())
    nodes.push(opts.resp ? { id, host: LOOPBACK, port, respPort: await freePort(), partitions } : { id, host: LOOPBACK, port, partitions })
  }
  const cluster: ClusterSpec = { name: opts.name ?? 'test-cluster', nodes }
  await mkdir(dir, { recursive: true })
  const path = join(dir, opts.file ?? 'cluster.json')
  await writeFile(path, `${JSON.stringify(cluster, null, 2)}\n`)
  return { path, cluster }
}

export interface NodeProcessOptions {
  readonly clusterFile: string
  readonly nodeId: number
  readonly dataDir: string
  /** Passed through the environment (ROSTORE_ADMIN_TOKEN), never on the command line. */
  readonly token?: string
  readonly keepVersions?: number
  /** Override the port of cluster.json (0 = any free port). */
  readonly port?: number
  readonly bind?: string
  /** --workers (serving processes); default: the CLI's default (the number of cores). */
  readonly workers?: number
  /** Extra environment, for example { ROSTORE_CRASH_AT: 'swap:opened' }. */
  readonly env?: Readonly<Record<string, string>>
  readonly extraArgs?: readonly string[]
  /** Default 20 s. */
  readonly readyTimeoutMs?: number
  /** `serve --config <file>` instead of --cluster/--node-id/--data-dir (those are then ignored). */
  readonly configFile?: string
}

export interface ExitInfo {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

export interface HttpResult {
  readonly status: number
  readonly headers: IncomingHttpHeaders
  readonly body: Buffer
}

/** Keep-alive agent shared by the helpers' requests. */
export const testAgent = new Agent({ keepAlive: true, maxSockets: 64 })

/** One HTTP request with a Buffer/JSON body; resolves with status, headers and the whole body. */
export function request(
  url: string,
  opts: {
    method?: string
    headers?: Record<string, string>
    body?: Buffer | string | object
    agent?: Agent | false
    timeoutMs?: number
  } = {},
): Promise<HttpResult> {
  let body: Buffer | undefined
  const headers: Record<string, string> = { ...opts.headers }
  if (opts.body !== undefined) {
    if (Buffer.isBuffer(opts.body)) body = opts.body
    else if (typeof opts.body === 'string') body = Buffer.from(opts.body)
    else {
      body = Buffer.from(JSON.stringify(opts.body))
      headers['content-type'] ??= 'application/json'
    }
    headers['content-length'] = String(body.length)
  }
  // The path is sent exactly as given: WHATWG URL parsing would resolve "%2e%2e" segments.
  const m = /^http:\/\/(\[[^\]]+\]|[^/:]+)(?::(\d+))?(\/.*)?$/.exec(url)
  if (!m) throw new Error(`not an http URL: ${url.slice(0, 100)}`)
  const target = { host: (m[1] as string).replace(/^\[|\]$/g, ''), port: m[2] === undefined ? 80 : Number(m[2]), path: m[3] ?? '/' }
  // `retry`: the keep-alive race (Node's docs, "request.reusedSocket"): the node closed an idle
  // connection as the request went out on it, so it never saw the request; once more, on a new
  // connection. client/http.ts retries the same race for the product's client.
  const once = (retry: boolean): Promise<HttpResult> =>
    new Promise((resolve, reject) => {
      const req = httpRequest({ ...target, method: opts.method ?? 'GET', headers, agent: opts.agent ?? testAgent }, (res) => {
        const parts: Buffer[] = []
        res.on('data', (c: Buffer) => parts.push(c))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts) }))
        res.on('error', reject)
      })
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (retry && req.reusedSocket && (err.code === 'ECONNRESET' || /socket hang up/.test(err.message))) resolve(once(false))
        else reject(err)
      })
      if (opts.timeoutMs) req.setTimeout(opts.timeoutMs, () => req.destroy(new Error(`request timed out after ${opts.timeoutMs} ms`)))
      req.end(body)
    })
  return once(true)
}

/** JSON of a response body (throws with the body text when it is not JSON). */
export function json<T = Record<string, unknown>>(r: HttpResult): T {
  try {
    return JSON.parse(r.body.toString('utf8')) as T
  } catch {
    throw new Error(`not JSON (status ${r.status}): ${r.body.toString('utf8').slice(0, 500)}`)
  }
}

export class NodeProcess {
  readonly child: ChildProcess
  /** stderr lines (JSON log events and anything else), the newest 5000. */
  readonly lines: string[] = []
  readonly exited: Promise<ExitInfo>
  private exitInfo: ExitInfo | undefined
  private host = LOOPBACK
  private boundPort = 0
  private boundRespPort: number | undefined
  private waiters: { pred: (e: Record<string, unknown>) => boolean; resolve: (e: Record<string, unknown>) => void }[] = []

  private constructor(readonly opts: NodeProcessOptions) {
    const args =
      opts.configFile !== undefined
        ? [cliPath(), 'serve', '--config', opts.configFile]
        : [cliPath(), 'serve', '--cluster', opts.clusterFile, '--node-id', String(opts.nodeId), '--data-dir', opts.dataDir]
    if (opts.keepVersions !== undefined) args.push('--keep-versions', String(opts.keepVersions))
    if (opts.port !== undefined) args.push('--port', String(opts.port))
    if (opts.bind !== undefined) args.push('--bind', opts.bind)
    if (opts.workers !== undefined) args.push('--workers', String(opts.workers))
    args.push(...(opts.extraArgs ?? []))
    const env: NodeJS.ProcessEnv = { ...process.env, ...opts.env }
    delete env.ROSTORE_ADMIN_TOKEN
    delete env.ROSTORE_READ_TOKEN
    delete env.ROSTORE_CRASH_AT
    Object.assign(env, opts.env)
    if (opts.token !== undefined) env.ROSTORE_ADMIN_TOKEN = opts.token
    this.child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] })
    let partial = ''
    const onText = (text: string): void => {
      partial += text
      let nl: number
      while ((nl = partial.indexOf('\n')) >= 0) {
        const line = partial.slice(0, nl)
        partial = partial.slice(nl + 1)
        this.lines.push(line)
        if (this.lines.length > 5000) this.lines.shift()
        let event: Record<string, unknown> | undefined
        try {
          event = JSON.parse(line) as Record<string, unknown>
        } catch {
          event = undefined
        }
        if (event) {
          for (const w of [...this.waiters]) {
            if (w.pred(event)) {
              this.waiters.splice(this.waiters.indexOf(w), 1)
              w.resolve(event)
            }
          }
        }
      }
    }
    this.child.stderr?.setEncoding('utf8').on('data', onText)
    this.child.stdout?.setEncoding('utf8').on('data', onText)
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => {
        this.exitInfo = { code, signal }
        resolve(this.exitInfo)
      })
    })
  }

  /** Spawn `rostore serve` and wait for its "listening" log line. */
  static async start(opts: NodeProcessOptions): Promise<NodeProcess> {
    const p = new NodeProcess(opts)
    const timeout = opts.readyTimeoutMs ?? 20_000
    const ready = await Promise.race([
      p.waitForEvent((e) => e['event'] === 'listening', timeout),
      p.exited.then((x) => {
        throw new Error(`rostore serve exited (${x.code ?? x.signal}) before listening:\n${p.logText()}`)
      }),
    ])
    p.host = String(ready['host'])
    p.boundPort = Number(ready['port'])
    if (ready['respPort'] !== undefined) p.boundRespPort = Number(ready['respPort'])
    return p
  }

  get port(): number {
    return this.boundPort
  }

  /** The RESP port the node listens on, when it runs one. */
  get respPort(): number | undefined {
    return this.boundRespPort
  }

  get url(): string {
    return `http://${this.host}:${this.boundPort}`
  }

  get pid(): number {
    return this.child.pid ?? -1
  }

  get running(): boolean {
    return this.exitInfo === undefined
  }

  logText(last = 200): string {
    return this.lines.slice(-last).join('\n')
  }

  /** Process ids of the serving workers, by worker index (from their "worker-serving" log events). */
  workerPids(): Map<number, number> {
    const out = new Map<number, number>()
    for (const e of this.events()) if (e['event'] === 'worker-serving') out.set(Number(e['index']), Number(e['pid']))
    return out
  }

  /** Parsed JSON log events so far. */
  events(): Record<string, unknown>[] {
    const out: Record<string, unknown>[] = []
    for (const l of this.lines) {
      try {
        out.push(JSON.parse(l) as Record<string, unknown>)
      } catch {
        // not a JSON line
      }
    }
    return out
  }

  /** The first log event (past or future) matching `pred`. */
  waitForEvent(pred: (e: Record<string, unknown>) => boolean, timeoutMs = 20_000): Promise<Record<string, unknown>> {
    const past = this.events().find(pred)
    if (past) return Promise.resolve(past)
    return new Promise((resolve, reject) => {
      const w = { pred, resolve: (e: Record<string, unknown>) => (clearTimeout(timer), resolve(e)) }
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(w), 1)
        reject(new Error(`no matching log event within ${timeoutMs} ms:\n${this.logText()}`))
      }, timeoutMs)
      this.waiters.push(w)
    })
  }

  request(path: string, opts: Parameters<typeof request>[1] = {}): Promise<HttpResult> {
    return request(`${this.url}${path}`, opts)
  }

  /** An admin call with the node's token. */
  admin(method: string, path: string, body?: object): Promise<HttpResult> {
    return this.request(`/admin${path}`, {
      method,
      body,
      headers: this.opts.token === undefined ? {} : { authorization: `Bearer ${this.opts.token}` },
    })
  }

  /** Poll an admin job until it is no longer running. */
  async waitJob(id: string, timeoutMs = 30_000): Promise<Record<string, unknown>> {
    const end = Date.now() + timeoutMs
    for (;;) {
      const r = await this.admin('GET', `/jobs/${id}`)
      const job = json(r)
      if (r.status !== 200) throw new Error(`job ${id}: ${r.status} ${r.body.toString()}`)
      if (job['state'] !== 'running') return job
      if (Date.now() > end) throw new Error(`job ${id} still running after ${timeoutMs} ms`)
      await new Promise((res) => setTimeout(res, 20))
    }
  }

  /** Install a node directory and wait for the job; throws unless it succeeded. */
  async install(store: string, path: string, opts: { swap?: boolean } = {}): Promise<Record<string, unknown>> {
    const r = await this.admin('POST', `/stores/${store}/install`, { path, ...(opts.swap ? { swap: true } : {}) })
    if (r.status !== 202) throw new Error(`install: ${r.status} ${r.body.toString()}`)
    const job = await this.waitJob(String(json(r)['id']))
    if (job['state'] !== 'succeeded') throw new Error(`install job ${JSON.stringify(job)}`)
    return job
  }

  signal(sig: NodeJS.Signals): void {
    if (this.running) this.child.kill(sig)
  }

  /** kill -9 and wait for the exit. */
  async kill9(): Promise<ExitInfo> {
    this.signal('SIGKILL')
    return this.exited
  }

  /** SIGTERM and wait for the exit. */
  async sigterm(): Promise<ExitInfo> {
    this.signal('SIGTERM')
    return this.exited
  }

  /**
   * A new process with the same options (and the same port, so URLs stay valid), after
   * this one has exited; `overrides` replace options (pass env: {} to drop a crash point).
   */
  async restart(overrides: Partial<NodeProcessOptions> = {}): Promise<NodeProcess> {
    if (this.running) await this.kill9()
    return NodeProcess.start({ ...this.opts, port: this.opts.port === 0 ? this.boundPort : this.opts.port, ...overrides })
  }
}

export interface TestCluster {
  readonly clusterFile: string
  readonly cluster: ClusterSpec
  readonly nodes: NodeProcess[]
  /** SIGKILL every node still running. */
  killAll(): Promise<void>
}

/**
 * Start one `rostore serve` per node of an existing cluster file (all nodes, or `ids`),
 * in parallel; data directories from `dataDir(id)`.
 */
export async function startClusterFromFile(
  clusterFile: string,
  opts: {
    dataDir: (id: number) => string
    ids?: readonly number[]
    token?: string
    keepVersions?: number
    env?: Readonly<Record<string, string>>
    extraArgs?: readonly string[]
  },
): Promise<TestCluster> {
  const cluster = JSON.parse(await readFile(clusterFile, 'utf8')) as ClusterSpec
  const ids = opts.ids ?? cluster.nodes.map((n) => n.id)
  const nodes = await Promise.all(
    ids.map((id) =>
      NodeProcess.start({
        clusterFile,
        nodeId: id,
        dataDir: opts.dataDir(id),
        token: opts.token,
        keepVersions: opts.keepVersions,
        env: opts.env,
        extraArgs: opts.extraArgs,
      }),
    ),
  )
  return {
    clusterFile,
    cluster,
    nodes,
    killAll: async () => {
      await Promise.all(nodes.map((n) => (n.running ? n.kill9() : Promise.resolve(undefined))))
    },
  }
}

/**
 * Start one `rostore serve` per node of a fresh loopback cluster: data directories
 * `<dir>/data-<id>`, cluster file `<dir>/cluster.json`. Nodes start in parallel.
 */
export async function startCluster(opts: {
  dir: string
  nodes?: number
  partitionsPerNode?: number
  token?: string
  keepVersions?: number
  env?: Readonly<Record<string, string>>
  dataDir?: (id: number) => string
  /** Give every node a respPort in cluster.json (so each serves RESP and forwards to the others). */
  resp?: boolean
  extraArgs?: readonly string[]
}): Promise<TestCluster> {
  const { path } = await writeClusterFile(opts.dir, { nodes: opts.nodes, partitionsPerNode: opts.partitionsPerNode, resp: opts.resp })
  return startClusterFromFile(path, {
    dataDir: opts.dataDir ?? ((id) => join(opts.dir, `data-${id}`)),
    token: opts.token,
    keepVersions: opts.keepVersions,
    env: opts.env,
    extraArgs: opts.extraArgs,
  })
}

/** A single node on a free loopback port (port 0 → the node picks one; restart keeps it). */
export async function startSingleNode(opts: {
  dir: string
  dataDir?: string
  token?: string
  keepVersions?: number
  workers?: number
  env?: Readonly<Record<string, string>>
  extraArgs?: readonly string[]
}): Promise<NodeProcess> {
  const { path } = await writeClusterFile(opts.dir, { nodes: 1 })
  return NodeProcess.start({
    clusterFile: path,
    nodeId: 0,
    dataDir: opts.dataDir ?? join(opts.dir, 'data'),
    token: opts.token,
    keepVersions: opts.keepVersions,
    port: 0,
    workers: opts.workers,
    env: opts.env,
    extraArgs: opts.extraArgs,
  })
}
