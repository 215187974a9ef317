import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { makeTmp } from '../../../../testkit/stores/tmp'
import { startSingleNode, type NodeProcess } from '../../../../testkit/cluster/node-process'
import { keyOf, makeVersions, STORE } from '../fixture'

/**
 * `--job-priority` (common/job-priority.ts): a supervisor runs its jobs' threads at nice 10
 * and the idle I/O class, and leaves its main thread (which forks the workers) and its
 * serving workers as they were. Read from /proc and ionice(1), as an operator would.
 */
const TOKEN = 'job-priority-token-0123456789'
const native = process.env['ROSTORE_NATIVE'] !== '0'

interface ThreadPriority {
  readonly tid: number
  readonly nice: number
  readonly io: string
}

function threadsOf(pid: number): ThreadPriority[] {
  return readdirSync(`/proc/${pid}/task`).map((t) => {
    const stat = readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8')
    // Fields after the command name's closing parenthesis start at field 3; nice is field 19.
    const nice = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16])
    const io = execFileSync('ionice', ['-p', t]).toString().trim()
    return { tid: Number(t), nice, io }
  })
}

function childPids(pid: number): number[] {
  return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
}

describe('job priority of a supervised node (real processes)', () => {
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

  const maybe = native ? test : test.skip
  maybe('low (the default): the supervisor threads but its main one lowered; main thread and workers untouched', async () => {
    const node = await startSingleNode({ dir: tmp.fresh(), token: TOKEN, workers: 2 })
    nodes.push(node)
    // A fetch and an install ran their jobs on the lowered threads and still complete.
    await node.install(STORE, src[1]!, { swap: true })
    expect((await node.request(`/stores/${STORE}/keys/${keyOf(1)}`)).status).toBe(200)
    const threads = threadsOf(node.pid)
    const main = threads.find((t) => t.tid === node.pid)
    expect(main).toMatchObject({ nice: 0 })
    expect(main?.io).not.toBe('idle')
    const others = threads.filter((t) => t.tid !== node.pid)
    expect(others.length).toBeGreaterThan(3)
    // Threads started after the lowering (by the main thread) are not; the pool's, V8's and libuv's are.
    const lowered = others.filter((t) => t.nice === 10 && t.io === 'idle')
    expect(lowered.length).toBeGreaterThanOrEqual(4)
    const workers = childPids(node.pid)
    expect(workers).toHaveLength(2)
    for (const w of workers) {
      for (const t of threadsOf(w)) {
        expect(t.nice).toBe(0)
        expect(t.io).not.toBe('idle')
      }
    }
  })

  test('normal: every thread as it started', async () => {
    const node = await startSingleNode({ dir: tmp.fresh(), token: TOKEN, workers: 2, extraArgs: ['--job-priority', 'normal'] })
    nodes.push(node)
    for (const pid of [node.pid, ...childPids(node.pid)]) for (const t of threadsOf(pid)) expect(t.nice).toBe(0)
  })
})
