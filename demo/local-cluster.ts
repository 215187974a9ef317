import { spawn, type ChildProcess } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseCluster, type Cluster } from '../cluster/cluster'
import { freePort } from '../common/net'
import { cliPath } from '../common/paths'
import { httpRequest } from '../client/http'

/**
 * A cluster of real `rostore serve` processes on loopback ports, for the quick start:
 * started from a cluster.json it writes, stopped with SIGTERM (then SIGKILL) so nothing
 * is left running.
 */
export interface LocalCluster {
  readonly cluster: Cluster
  readonly clusterFile: string
  readonly adminToken: string
  stop(): Promise<number[]>
}

export async function startLocalCluster(dir: string, nodes: number, partitionsPerNode: number, adminToken: string): Promise<LocalCluster> {
  const spec = { name: 'local', nodes: [] as { id: number; host: string; port: number; partitions: number[] }[] }
  for (let id = 0; id < nodes; id++) {
    spec.nodes.push({
      id,
      host: '127.0.0.1',
      port: await freePort(),
      partitions: Array.from({ length: partitionsPerNode }, (_, j) => j * nodes + id),
    })
  }
  const cluster = parseCluster(spec)
  const clusterFile = join(dir, 'cluster.json')
  writeFileSync(clusterFile, JSON.stringify(spec, null, 2))
  const children: ChildProcess[] = []
  const exits: Promise<number>[] = []
  const stop = async (): Promise<number[]> => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGTERM')
    const timer = setTimeout(() => children.forEach((c) => c.exitCode === null && c.kill('SIGKILL')), 10_000)
    const codes = await Promise.all(exits)
    clearTimeout(timer)
    return codes
  }
  try {
    for (const n of cluster.nodes) {
      const dataDir = join(dir, `node-${n.id}-data`)
      mkdirSync(dataDir, { recursive: true })
      const child = spawn(
        process.execPath,
        [cliPath(), 'serve', '--cluster', clusterFile, '--node-id', String(n.id), '--data-dir', dataDir],
        {
          env: { ...process.env, ROSTORE_ADMIN_TOKEN: adminToken },
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      )
      let stderr = ''
      child.stderr?.on('data', (b: Buffer) => (stderr = (stderr + b.toString()).slice(-4000)))
      children.push(child)
      exits.push(new Promise((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1)))))
      await waitHealthy(n.host, n.port, child, () => stderr)
    }
  } catch (err) {
    await stop()
    throw err
  }
  return { cluster, clusterFile, adminToken, stop }
}

async function waitHealthy(host: string, port: number, child: ChildProcess, stderr: () => string): Promise<void> {
  const deadline = Date.now() + 15_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`node on port ${port} exited: ${stderr()}`)
    const ok = await httpRequest({ host, port, method: 'GET', path: '/health', timeoutMs: 500 }).then(
      (r) => r.status === 200,
      () => false,
    )
    if (ok) return
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`node on port ${port} did not become healthy: ${stderr()}`)
}
