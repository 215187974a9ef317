import { execFileSync, spawn } from 'node:child_process'
import { once } from 'node:events'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { makeTmp } from '../../../../testkit/stores/tmp'
import { startSingleNode, type NodeProcess } from '../../../../testkit/cluster/node-process'
import { keyOf, makeVersions, STORE } from '../fixture'

/**
 * `--job-priority` (common/job-priority.ts): a job worker thread lowers itself to nice 10 and
 * the idle I/O class when its process runs jobs low, and a node's other threads (its main
 * thread, the pool, V8's helpers) and its serving workers keep their priority. Read from
 * /proc and ionice(1), as an operator would.
 */
const TOKEN = 'job-priority-token-0123456789'
const native = process.env['ROSTORE_NATIVE'] !== '0'

interface ThreadPriority {
  readonly tid: number
  readonly nice: number
  readonly io: string
}

function threadPriority(pid: number, tid: string): ThreadPriority {
  const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
  // Fields after the command name's closing parenthesis start at field 3; nice is field 19.
  const nice = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16])
  return { tid: Number(tid), nice, io: execFileSync('ionice', ['-p', tid]).toString().trim() }
}

const threadsOf = (pid: number): ThreadPriority[] => readdirSync(`/proc/${pid}/task`).map((t) => threadPriority(pid, t))

function childPids(pid: number): number[] {
  return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
}

/** A worker thread that starts as a job thread does, in a child process with `env`: its priority, and its process's other threads'. */
async function jobThread(env: Record<string, string>): Promise<{ self: ThreadPriority; others: ThreadPriority[] }> {
  const lib = join(__dirname, '..', '..', '..', '..', 'common', 'job-priority.js')
  const worker = `
    const { parentPort } = require('node:worker_threads')
    require(${JSON.stringify(lib)}).lowerIfJobThread()
    parentPort.postMessage(require('node:fs').readlinkSync('/proc/thread-self').split('/').pop())
    parentPort.once('message', () => process.exit(0))`
  const main = `
    const { Worker } = require('node:worker_threads')
    const w = new Worker(${JSON.stringify(worker)}, { eval: true })
    w.once('message', (tid) => process.stdout.write(tid + '\\n'))
    process.stdin.once('end', () => process.exit(0)).resume()`
  const child = spawn(process.execPath, ['-e', main], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'inherit'] })
  try {
    const [line] = (await once(child.stdout, 'data')) as [Buffer]
    const tid = line.toString().trim()
    const pid = child.pid as number
    return { self: threadPriority(pid, tid), others: threadsOf(pid).filter((t) => String(t.tid) !== tid) }
  } finally {
    child.stdin.end()
    await once(child, 'exit')
  }
}

describe('job priority (real processes)', () => {
  const tmp = makeTmp('rostore-job-priority-')
  const nodes: NodeProcess[] = []
  let src: Awaited<ReturnType<typeof makeVersions>>
  beforeAll(async () => {
    src = await makeVersions(tmp.dir, [1])
  })
  afterAll(async () => {
    for (const n of nodes) if (n.running) await n.kill9()
    tmp.cleanup()
  })

  test('low (the default): a supervised node installs and serves; its own threads and its workers keep their priority', async () => {
    const node = await startSingleNode({ dir: tmp.fresh(), token: TOKEN, workers: 2 })
    nodes.push(node)
    // The install's verify ran on a lowered job thread and completed.
    await node.install(STORE, src[1]!, { swap: true })
    expect((await node.request(`/stores/${STORE}/keys/${keyOf(1)}`)).status).toBe(200)
    const workers = childPids(node.pid)
    expect(workers).toHaveLength(2)
    for (const pid of [node.pid, ...workers]) {
      for (const t of threadsOf(pid)) {
        expect(t.nice).toBe(0)
        expect(t.io).not.toBe('idle')
      }
    }
  })

  const maybe = native ? test : test.skip
  maybe('a job worker thread lowers itself when its process runs jobs low, and only itself', async () => {
    const lowered = await jobThread({ ROSTORE_JOB_PRIORITY: 'low' })
    expect(lowered.self).toMatchObject({ nice: 10, io: 'idle' })
    expect(lowered.others.length).toBeGreaterThan(3)
    for (const t of lowered.others) expect(t.nice).toBe(0)
    const normal = await jobThread({ ROSTORE_JOB_PRIORITY: 'normal' })
    expect(normal.self.nice).toBe(0)
    expect(normal.self.io).not.toBe('idle')
  })
})
