/**
 * A real Ray cluster on this machine for tests and benchmarks: a head node and worker
 * nodes, each a separate `ray start --block` in its own session (setsid), so one node can
 * be killed whole, as a machine failure would, and everything the test started is stopped
 * without touching any other Ray on the machine (no `ray stop`). Ray's worker processes
 * move to process groups of their own but stay in the session: a node is its session. Loopback only, the
 * dashboard off, a small object store per node, and each node's session files, logs and
 * spilled objects under its own directory of `dir`.
 *
 * The head gets no CPUs, so tasks run only on worker nodes: a test can kill the node of a
 * running task without killing the cluster's control plane with it.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { createServer } from 'node:net'
import { dirname, join } from 'node:path'
import { createInterface } from 'node:readline'
import { ensurePython } from './python'

/** The Python packages the Ray engine needs (grpcio: Ray's memory summary, for spilled bytes). */
export const RAY_PACKAGES = ['ray', 'grpcio'] as const

export interface RayClusterOptions {
  /** Directory for the nodes' temp dirs (sessions, logs, spilled objects). */
  readonly dir: string
  readonly workers?: number
  /** Object store bytes per node; default 80 MB (Ray's minimum is about 75 MB). */
  readonly objectStoreBytes?: number
  readonly cpusPerWorker?: number
  /** More environment of every node (its tasks inherit it), e.g. the nodes' own AWS_* credentials. */
  readonly env?: Readonly<Record<string, string>>
}

export interface RayNode {
  readonly name: string
  readonly process: ChildProcess
  /** Session id (= the pid of its `ray start`): every process of the node (raylet, workers) is in it. */
  readonly sid: number
}

export interface RayCluster {
  readonly address: string
  readonly python: string
  readonly workers: RayNode[]
  /** Starts one more worker node (e.g. to replace a killed one). */
  addWorker(): Promise<RayNode>
  /** The worker node whose process group holds `pid`, if any. */
  workerOf(pid: number): RayNode | undefined
  /** SIGKILL of every process of a node, as if its machine died; resolves when its `ray start` is gone. */
  kill(node: RayNode): Promise<void>
  stop(): Promise<void>
}

export async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer()
    s.once('error', rej)
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port
      s.close(() => res(port))
    })
  })
}

/** Node failures are noticed within about 2 s instead of Ray's default of about 30 s. */
const SYSTEM_CONFIG = JSON.stringify({ health_check_period_ms: 500, health_check_failure_threshold: 4, health_check_timeout_ms: 500 })

export async function startRayCluster(o: RayClusterOptions): Promise<RayCluster> {
  const python = ensurePython(RAY_PACKAGES)
  const ray = join(dirname(python), 'ray')
  const port = await freePort()
  const address = `127.0.0.1:${port}`
  const storeBytes = String(o.objectStoreBytes ?? 80_000_000)
  const nodes: RayNode[] = []
  const workers: RayNode[] = []
  let seq = 0

  const startNode = async (name: string, args: string[]): Promise<RayNode> => {
    const temp = join(o.dir, name)
    await mkdir(temp, { recursive: true })
    const child = spawn(
      ray,
      [
        'start',
        '--block',
        '--node-ip-address',
        '127.0.0.1',
        '--temp-dir',
        temp,
        '--object-store-memory',
        storeBytes,
        '--disable-usage-stats',
        ...args,
      ],
      // detached: its own process group (and session), killed as a whole.
      { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...o.env, RAY_USAGE_STATS_ENABLED: '0' } },
    )
    const node: RayNode = { name, process: child, sid: child.pid! }
    nodes.push(node)
    const log: string[] = []
    await new Promise<void>((res, rej) => {
      const onLine = (l: string): void => {
        log.push(l)
        // Printed once the node's raylet has registered with the head.
        if (/Ray runtime started|This command will now block/.test(l)) res()
      }
      createInterface({ input: child.stdout! }).on('line', onLine)
      createInterface({ input: child.stderr! }).on('line', onLine)
      child.once('exit', (code) => rej(new Error(`ray start (${name}) exited with ${code}:\n${log.slice(-20).join('\n')}`)))
    })
    return node
  }

  const cluster: RayCluster = {
    address,
    python,
    workers,
    addWorker: async () => {
      const w = await startNode(`worker-${++seq}`, ['--address', address, '--num-cpus', String(o.cpusPerWorker ?? 1)])
      workers.push(w)
      return w
    },
    workerOf: (pid) => {
      const sid = sessionOf(pid)
      return workers.find((w) => w.sid === sid)
    },
    kill: async (node) => {
      const gone = new Promise<void>((res) => {
        if (node.process.exitCode !== null || node.process.signalCode !== null) res()
        else node.process.once('exit', () => res())
      })
      killSession(node.sid)
      await gone
      const i = workers.indexOf(node)
      if (i >= 0) workers.splice(i, 1)
    },
    stop: async () => {
      for (const n of [...nodes].reverse()) killSession(n.sid)
    },
  }
  try {
    await startNode('head', [
      '--head',
      '--port',
      String(port),
      '--num-cpus',
      '0',
      '--include-dashboard=false',
      '--system-config',
      SYSTEM_CONFIG,
    ])
    for (let i = 0; i < (o.workers ?? 2); i++) await cluster.addWorker()
  } catch (err) {
    await cluster.stop()
    throw err
  }
  return cluster
}

/** /proc/<pid>/stat: "pid (comm) state ppid pgrp session ..."; comm may hold spaces and parentheses. */
function sessionOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[3])
  } catch {
    return undefined
  }
}

/** SIGKILL to every process of a session this module started (and to nothing else). */
function killSession(sid: number): void {
  for (const name of readdirSync('/proc')) {
    const pid = Number(name)
    if (!Number.isInteger(pid) || pid <= 1 || sessionOf(pid) !== sid) continue
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // exited meanwhile
    }
  }
}
