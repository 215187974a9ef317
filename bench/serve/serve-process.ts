/**
 * A `rostore serve` child process for the serving benchmarks (sections 3 and 3b), pinned
 * to the server core, and the data directory it serves.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { cliPath } from '../../common/paths'
import { ensureDir, workRoot, type Dataset } from '../kit/data'
import { loadPeerArtifact } from '../lookup/lookup-bench'
import { ensureArtifact, STORE, benchCluster } from '../kit/rostore'
import { freePort, pinArgs, treeCpuSeconds } from '../kit/system'

/** The core the server under test is pinned to; load generators take the other. */
export const SERVER_CPU = 0

export class ServeProcess {
  private constructor(
    readonly child: ChildProcess,
    readonly port: number,
    readonly stderr: string[],
  ) {}

  static async start(
    dataDir: string,
    cluster: string,
    opts: {
      nodeId?: number
      extraArgs?: readonly string[]
      /** --workers; default 1 (one serving process, pinned with the supervisor to the server core). */
      workers?: number
      /** Pin the node to the server core (default); false lets it use every core. */
      pinned?: boolean
    } = {},
  ): Promise<ServeProcess> {
    const port = await freePort()
    const argv = [
      ...(opts.pinned === false ? [] : pinArgs(SERVER_CPU)),
      process.execPath,
      cliPath(),
      'serve',
      '--workers',
      String(opts.workers ?? 1),
      '--cluster',
      cluster,
      '--node-id',
      String(opts.nodeId ?? 0),
      '--data-dir',
      dataDir,
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      ...(opts.extraArgs ?? []),
    ]
    const [bin, ...args] = argv as [string, ...string[]]
    const env = { ...process.env }
    delete env.ROSTORE_ADMIN_TOKEN
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], env })
    const lines: string[] = []
    const p = new ServeProcess(child, port, lines)
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`rostore serve did not listen within 60 s:\n${lines.slice(-20).join('\n')}`)), 60_000)
      let partial = ''
      const onData = (c: Buffer): void => {
        partial += c.toString('utf8')
        let nl: number
        while ((nl = partial.indexOf('\n')) >= 0) {
          const line = partial.slice(0, nl)
          partial = partial.slice(nl + 1)
          lines.push(line)
          if (lines.length > 500) lines.shift()
          if (line.includes('"event":"listening"')) {
            clearTimeout(timer)
            resolve()
          }
        }
      }
      child.stdout?.on('data', onData)
      child.stderr?.on('data', onData)
      child.once('exit', (code, sig) => {
        clearTimeout(timer)
        reject(new Error(`rostore serve exited (${code ?? sig}) before listening:\n${lines.slice(-20).join('\n')}`))
      })
    })
    return p
  }

  get pid(): number {
    return this.child.pid ?? -1
  }

  /**
   * The node's CPU time, its serving workers included. Under taskset the child is taskset,
   * which execs node (same pid).
   */
  cpuSeconds(): number {
    return treeCpuSeconds(this.pid)
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return
    const exited = new Promise<void>((r) => this.child.once('exit', () => r()))
    this.child.kill('SIGTERM')
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000)
    await exited
    clearTimeout(timer)
  }
}

/**
 * A data directory under work/<name> serving the plain rostore artifact as version 1 of
 * STORE (hard links: the version shares the artifact's immutable files), and a one-node
 * cluster file.
 */
export async function serveDataDir(ds: Dataset, name: string): Promise<{ dataDir: string; cluster: string }> {
  const nodeDir = join(await ensureArtifact(ds, 'rostore-served', loadPeerArtifact(ds)), 'out', 'node-0')
  const root = ensureDir(join(workRoot(), name))
  return { dataDir: linkVersion(nodeDir, join(root, 'data')), cluster: benchCluster(root) }
}

/** `dataDir` afresh, holding `nodeDir` as version 1 of STORE (hard links) and live. */
export function linkVersion(nodeDir: string, dataDir: string): string {
  rmSync(dataDir, { recursive: true, force: true })
  ensureDir(join(dataDir, STORE))
  execFileSync('cp', ['-al', nodeDir, join(dataDir, STORE, 'version-1')])
  writeFileSync(join(dataDir, STORE, 'LIVE'), '1\n')
  return dataDir
}
