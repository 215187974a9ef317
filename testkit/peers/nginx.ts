import { freePort } from '../../common/net'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import http from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export const NGINX_BIN = process.env['ROSTORE_NGINX'] ?? '/usr/sbin/nginx'

export function nginxAvailable(): boolean {
  return existsSync(NGINX_BIN)
}

export interface NginxOptions {
  /** Directory served at `/`. */
  readonly root: string
  /** Port to bind; default a free loopback port. */
  readonly port?: number
  /** Extra directives inside the `server { }` block, e.g. a `location` with `limit_rate`. */
  readonly serverConfig?: string
}

/** One line of the access log; `start` is the request's start time (epoch seconds). */
export interface AccessLogEntry {
  readonly start: number
  readonly end: number
  readonly status: number
  readonly bytesSent: number
  readonly method: string
  readonly uri: string
  /** The Range request header, '' when none. */
  readonly range: string
}

export { freePort }

function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/', agent: false, timeout: 500 }, (res) => {
      res.resume()
      resolve(true)
    })
    req.on('timeout', () => req.destroy())
    req.on('error', () => resolve(false))
  })
}

// Kill any nginx still running when the test process goes away (a failed test skipping
// its afterAll, a jest worker torn down): exit handlers must be synchronous.
const running = new Set<ChildProcess>()
process.once('exit', () => {
  for (const c of running) c.kill('SIGKILL')
})

/**
 * A throwaway nginx in the foreground (`daemon off`, single process) with its own config,
 * pid file and logs in a temp dir, serving `root` on a loopback port. `stop()` and
 * `start()` again reuse the port, to play a server restart in the middle of a fetch.
 */
export class Nginx {
  private child: ChildProcess | undefined
  private exited: Promise<void> = Promise.resolve()

  private constructor(
    readonly dir: string,
    readonly port: number,
    readonly conf: string,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}/`
  }

  get accessLogPath(): string {
    return join(this.dir, 'access.log')
  }

  static async launch(opts: NginxOptions): Promise<Nginx> {
    const dir = await mkdtemp(join(tmpdir(), 'rostore-nginx-'))
    const port = opts.port ?? (await freePort())
    for (const t of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) await mkdir(join(dir, 'tmp', t), { recursive: true })
    const asRoot = process.getuid?.() === 0
    const conf = join(dir, 'nginx.conf')
    await writeFile(
      conf,
      `daemon off;
master_process off;
${asRoot ? 'user root;' : ''}
pid ${dir}/nginx.pid;
error_log ${dir}/error.log info;
events { worker_connections 1024; }
http {
  default_type application/octet-stream;
  log_format rostore '$msec $request_time $status $body_bytes_sent "$request_method $uri" "$http_range"';
  access_log ${dir}/access.log rostore;
  client_body_temp_path ${dir}/tmp/body;
  proxy_temp_path ${dir}/tmp/proxy;
  fastcgi_temp_path ${dir}/tmp/fastcgi;
  uwsgi_temp_path ${dir}/tmp/uwsgi;
  scgi_temp_path ${dir}/tmp/scgi;
  sendfile on;
  tcp_nopush on;
  keepalive_timeout 30s;
  server {
    listen 127.0.0.1:${port};
    root ${opts.root};
    autoindex off;
    ${opts.serverConfig ?? ''}
  }
}
`,
    )
    const n = new Nginx(dir, port, conf)
    try {
      await n.start()
    } catch (err) {
      await rm(dir, { recursive: true, force: true })
      throw err
    }
    return n
  }

  /** Starts (again) on the same port; resolves once it answers HTTP. */
  async start(): Promise<void> {
    if (this.child !== undefined) throw new Error('nginx already running')
    // -e: the error log before the config is read; the packaged default may not be writable.
    const child = spawn(NGINX_BIN, ['-c', this.conf, '-p', this.dir, '-e', join(this.dir, 'error.log')], {
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    let stderr = ''
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()))
    this.child = child
    running.add(child)
    let gone = false
    this.exited = new Promise<void>((resolve) => {
      const done = (): void => {
        gone = true
        running.delete(child)
        resolve()
      }
      child.once('exit', done)
      // Spawn failures (no binary) emit 'error' and no 'exit'.
      child.once('error', (err) => {
        stderr += `${err.message}\n`
        done()
      })
    })
    const deadline = Date.now() + 10_000
    while (!(await answers(this.port))) {
      if (gone || Date.now() > deadline) {
        const log = await readFile(join(this.dir, 'error.log'), 'utf8').catch(() => '')
        await this.stop()
        throw new Error(`nginx did not come up on port ${this.port}: ${stderr}\n${log.split('\n').slice(-10).join('\n')}`)
      }
      await new Promise((r) => setTimeout(r, 50))
    }
  }

  /** Fast shutdown (open transfers are cut, as in a crash or restart); SIGKILL if slow. */
  async stop(): Promise<void> {
    const child = this.child
    if (child === undefined) return
    this.child = undefined
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
    const timer = setTimeout(() => child.kill('SIGKILL'), 3000)
    await this.exited
    clearTimeout(timer)
  }

  /** Stops nginx and removes its temp dir (not the served root). */
  async dispose(): Promise<void> {
    await this.stop()
    await rm(this.dir, { recursive: true, force: true })
  }

  async accessLog(): Promise<AccessLogEntry[]> {
    const text = await readFile(this.accessLogPath, 'utf8').catch(() => '')
    const out: AccessLogEntry[] = []
    for (const line of text.split('\n')) {
      const m = /^(\S+) (\S+) (\d+) (\d+) "(\S+) (\S+)" "(.*)"$/.exec(line)
      if (!m) continue
      const end = Number(m[1])
      out.push({
        start: end - Number(m[2]),
        end,
        status: Number(m[3]),
        bytesSent: Number(m[4]),
        method: m[5] ?? '',
        uri: m[6] ?? '',
        range: m[7] === '-' ? '' : (m[7] ?? ''),
      })
    }
    return out
  }
}
