import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { freePort } from '../../common/net'
import { json, request } from '../cluster/node-process'

export const PROMETHEUS_BIN = process.env['ROSTORE_PROMETHEUS'] ?? '/usr/bin/prometheus'
export const PROMTOOL_BIN = process.env['ROSTORE_PROMTOOL'] ?? '/usr/bin/promtool'

export function prometheusAvailable(): boolean {
  return existsSync(PROMETHEUS_BIN) && existsSync(PROMTOOL_BIN)
}

/** `promtool <args>` in `cwd`: exit code and both outputs. */
export function promtool(args: readonly string[], cwd: string): { code: number | null; output: string } {
  const r = spawnSync(PROMTOOL_BIN, args, { cwd, encoding: 'utf8', timeout: 60_000 })
  return { code: r.status, output: `${r.stdout}${r.stderr}` }
}

export interface PrometheusAlert {
  readonly labels: Record<string, string>
  readonly state: 'pending' | 'firing'
}

const running = new Set<ChildProcess>()
process.once('exit', () => {
  for (const c of running) c.kill('SIGKILL')
})

/**
 * A throwaway Prometheus server on a free loopback port, with its storage in `dir`,
 * scraping `targets` (host:port) as job "rostore" every second and evaluating `ruleFiles`
 * every second. `stop()` kills it.
 */
export class Prometheus {
  private constructor(
    readonly port: number,
    private readonly child: ChildProcess,
    private readonly exited: Promise<void>,
    private readonly log: string[],
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`
  }

  static async launch(opts: {
    dir: string
    targets: readonly string[]
    ruleFiles: readonly string[]
    /** A bearer token file for the scrapes (nodes with a metrics token). */
    credentialsFile?: string
  }): Promise<Prometheus> {
    await mkdir(join(opts.dir, 'data'), { recursive: true })
    const config = join(opts.dir, 'prometheus.yml')
    const auth = opts.credentialsFile ? `    authorization:\n      credentials_file: ${opts.credentialsFile}\n` : ''
    await writeFile(
      config,
      `global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
${opts.ruleFiles.map((f) => `  - ${f}`).join('\n')}
scrape_configs:
  - job_name: rostore
${auth}    static_configs:
      - targets: [${opts.targets.map((t) => `'${t}'`).join(', ')}]
`,
    )
    const port = await freePort()
    const child = spawn(
      PROMETHEUS_BIN,
      [
        `--config.file=${config}`,
        `--storage.tsdb.path=${join(opts.dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=warn',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    )
    running.add(child)
    const log: string[] = []
    child.stderr?.setEncoding('utf8').on('data', (t: string) => log.push(t))
    const exited = new Promise<void>((resolve) =>
      child.once('exit', () => {
        running.delete(child)
        resolve()
      }),
    )
    const p = new Prometheus(port, child, exited, log)
    await p.until(async () => (await request(`${p.url}/-/ready`).catch(() => undefined))?.status === 200, 30_000, 'Prometheus ready')
    return p
  }

  /** GET a path of the HTTP API (`/api/v1/...`): its `data`. */
  async api<T>(path: string): Promise<T> {
    const r = await request(`${this.url}${path}`)
    if (r.status !== 200) throw new Error(`prometheus ${path}: ${r.status} ${r.body.toString().slice(0, 500)}`)
    return json<{ data: T }>(r).data
  }

  alerts(): Promise<PrometheusAlert[]> {
    return this.api<{ alerts: PrometheusAlert[] }>('/api/v1/alerts').then((d) => d.alerts)
  }

  /** Targets by health ("up", "down", "unknown"). */
  async targetHealth(): Promise<Record<string, string>> {
    const d = await this.api<{ activeTargets: { labels: { instance: string }; health: string }[] }>('/api/v1/targets')
    return Object.fromEntries(d.activeTargets.map((t) => [t.labels.instance, t.health]))
  }

  /** Polls `check` every 200 ms until it holds; throws after `timeoutMs` naming `what`. */
  async until(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
    const end = Date.now() + timeoutMs
    for (;;) {
      if (this.child.exitCode !== null) throw new Error(`prometheus exited while waiting for ${what}:\n${this.log.join('')}`)
      if (await check()) return
      if (Date.now() > end) throw new Error(`no ${what} within ${timeoutMs} ms:\n${this.log.join('').slice(-2000)}`)
      await new Promise((r) => setTimeout(r, 200))
    }
  }

  async stop(): Promise<void> {
    this.child.kill('SIGKILL')
    await this.exited
  }
}
