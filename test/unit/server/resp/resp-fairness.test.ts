import { writeFileSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { join } from 'node:path'
import { nullLogger } from '../../../../server/log'
import { startNode, type RunningNode } from '../../../../server/node'
import { makeNodeDir } from '../../../../testkit/stores/make-store'
import { NodeProcess, writeClusterFile } from '../../../../testkit/cluster/node-process'
import { makeTmp } from '../../../../testkit/stores/tmp'

/**
 * Connections share a serving process's time: clients pipelining 10,000-key MGETs take one
 * of them per turn of the event loop, so a client of small commands is answered while their
 * pipelines are still running, not after them. And a node stops once the work it took is
 * done, whatever its clients do with their side of the connection. For the share of time
 * the node is a process of its own (its clients' whole pipelines then wait in its socket
 * buffers, as from remote clients), and the light client reads the node's own count of keys
 * read (INFO) to see how many MGETs ran between two of its replies; for the stop it runs
 * in-process, so the test reads what close() reports.
 */
jest.setTimeout(60_000)
const tmp = makeTmp('rostore-resp-fair-')
const KEYS = 2000
const HEAVY = 4
/** Arguments a connection may run before it yields (server/resp/connection-host.ts). */
const TURN_ARGS = 4096
let node: RunningNode
let port: number
let closed: Promise<boolean> | undefined
/** The node process the fairness tests talk to. */
let served: NodeProcess | undefined
let dataDir: string

beforeAll(async () => {
  dataDir = join(tmp.dir, 'data')
  await makeNodeDir(
    join(dataDir, 'users', 'version-1'),
    Array.from({ length: KEYS }, (_, i): [string, string] => [`key-${i}`, `value-${i}`]),
    { store: 'users', version: 1 },
  )
  writeFileSync(join(dataDir, 'users', 'LIVE'), '1\n')
  node = await startNode({
    cluster: { name: 'unit', nodes: [{ id: 0, host: '127.0.0.1', port: 1, partitions: [0] }] },
    nodeId: 0,
    dataDir,
    bind: '127.0.0.1',
    port: 0,
    log: nullLogger,
    defaultMetrics: false,
    drainTimeoutMs: 20_000,
    resp: { port: 0 },
  })
  port = node.resp!.port
})

afterAll(async () => {
  await (closed ?? node?.close())
  if (served?.running) {
    served.child.kill('SIGKILL')
    await served.exited
  }
  tmp.cleanup()
})

function mget(keys: number): Buffer {
  return Buffer.from(
    `*${keys + 1}\r\n$4\r\nMGET\r\n${Array.from({ length: keys }, (_, i) => {
      const k = `users:key-${i % KEYS}`
      return `$${k.length}\r\n${k}\r\n`
    }).join('')}`,
  )
}
const MGET = mget(10_000)

function open(opts: { allowHalfOpen?: boolean; to?: number } = {}): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port: opts.to ?? port, allowHalfOpen: opts.allowHalfOpen ?? false }, () => resolve(s))
    s.once('error', reject)
  })
}

/** Calls `onReply` for every MGET reply and `onEcho(n)` for every `ECHO seq-<n>` reply a heavy client receives, in order. */
function countReplies(s: Socket, keys: number, onReply: () => void, onEcho: (n: number) => void = () => undefined): void {
  let tail = ''
  const marks = new RegExp(`\\$\\d+\\r\\nseq-(\\d+)\\r\\n|\\*${keys}\\r\\n`, 'g')
  s.on('data', (d: Buffer) => {
    const t = tail + d.toString('latin1')
    let end = 0
    for (const m of t.matchAll(marks)) {
      if (m[1] === undefined) onReply()
      else onEcho(Number(m[1]))
      end = (m.index ?? 0) + m[0].length
    }
    // Keep what could be the start of a mark cut by this read.
    tail = t.slice(Math.max(end, t.length - 24))
  })
}

/** 200 ECHOs of 60,000 bytes sent at once, their 12 MB of replies read. */
function warmUp(s: Socket): Promise<void> {
  const arg = 'w'.repeat(60_000)
  const one = `*2\r\n$4\r\nECHO\r\n$${arg.length}\r\n${arg}\r\n`
  const expected = 200 * `$${arg.length}\r\n${arg}\r\n`.length
  return new Promise((resolve) => {
    let got = 0
    const onData = (d: Buffer): void => {
      got += d.length
      if (got < expected) return
      s.off('data', onData)
      resolve()
    }
    s.on('data', onData)
    s.write(one.repeat(200))
  })
}

/** ECHO seq-<n>: a reply no value holds, to see the order of a pipeline's replies. */
function echo(n: number): Buffer {
  const m = `seq-${n}`
  return Buffer.from(`*2\r\n$4\r\nECHO\r\n$${m.length}\r\n${m}\r\n`)
}

/** One request/reply of the light client: the MGETs of `keys` keys the node had run when it answered (INFO's keys read). */
function mgetsRun(s: Socket, keys: number): Promise<number> {
  return new Promise((resolve) => {
    let text = ''
    const onData = (d: Buffer): void => {
      text += d.toString('latin1')
      const m = /rostore_local_keys:(\d+)\r\n/.exec(text)
      // The reply is one bulk string; its last line ends it.
      if (m && text.endsWith('\r\n\r\n')) {
        s.off('data', onData)
        resolve(Number(m[1]) / keys)
      }
    }
    s.on('data', onData)
    s.write('INFO stats\r\n')
  })
}

test.each([
  { keys: 10_000, pipeline: 30 },
  { keys: 2_000, pipeline: 60 },
])(
  'a client of small commands is answered between the MGETs of clients pipelining $pipeline MGETs of $keys keys, each of which gets all its replies in order',
  async ({ keys, pipeline }) => {
    if (!served) {
      const { path } = await writeClusterFile(join(tmp.dir, 'process'), { nodes: 1 })
      served = await NodeProcess.start({
        clusterFile: path,
        nodeId: 0,
        dataDir,
        port: 0,
        workers: 1,
        extraArgs: ['--resp-port', '0'],
      })
    }
    const to = served.respPort!
    const heavy = await Promise.all(Array.from({ length: HEAVY }, () => open({ to })))
    // Long-lived connections: the kernel has grown their receive buffers (it does so for
    // connections read quickly), so a whole pipeline waits in the node's socket buffers.
    await Promise.all(heavy.map((s) => warmUp(s)))
    const command = mget(keys)
    let received = 0
    const echoes = heavy.map((): number[] => [])
    heavy.forEach((s, i) =>
      countReplies(
        s,
        keys,
        () => received++,
        (n) => echoes[i]!.push(n),
      ),
    )
    const light = await open({ to })
    const start = await mgetsRun(light, keys)
    for (const s of heavy) s.write(Buffer.concat(Array.from({ length: pipeline }, (_, n) => [command, echo(n)]).flat()))
    // Between two of its replies, how many MGETs the node ran.
    const between: number[] = []
    let last = start
    for (let i = 0; i < 10_000 && received < HEAVY * pipeline; i++) {
      const now = await mgetsRun(light, keys)
      between.push(now - last)
      last = now
    }
    if (process.env.ROSTORE_SHOW_FIGURES) console.log(JSON.stringify({ keys, between }))
    // The light client kept being answered while the pipelines ran (~20 times; read greedily,
    // each connection running every command its reads held, it was answered 2 or 3 times).
    expect(between.filter((n) => n > 0).length).toBeGreaterThanOrEqual(8)
    // A heavy connection runs `perSlot` MGETs before it yields, once as it reads and once as
    // it resumes in each turn of the event loop. The light reply leaves in one turn's reads,
    // its next request is written in the next turn's and read in the one after: five slots of
    // each heavy connection pass in between, ten allowing for a light client scheduled late.
    const perSlot = Math.ceil(TURN_ARGS / (keys + 1))
    expect(Math.max(...between)).toBeLessThanOrEqual(10 * perSlot * HEAVY)
    // Every pipeline got all its replies, in the order of its commands.
    for (let i = 0; i < HEAVY; i++) {
      for (let n = 0; n < 1000 && echoes[i]!.length < pipeline; n++) await new Promise((r) => setTimeout(r, 10))
      expect(echoes[i]).toEqual(Array.from({ length: pipeline }, (_, n) => n))
    }
    for (const s of heavy) s.destroy()
    light.destroy()
  },
)

test('stop: replies to what was read go out, then the node stops although clients keep their side open or keep sending', async () => {
  // Half-open: answers PING, then never closes its side.
  const halfOpen = await open({ allowHalfOpen: true })
  const pong = new Promise<void>((resolve) => halfOpen.once('data', () => resolve()))
  halfOpen.write('PING\r\n')
  await pong
  // Keeps pipelining MGETs while the node stops, and never closes its side either.
  const pipelining = await open({ allowHalfOpen: true })
  let replies = 0
  countReplies(pipelining, 10_000, () => replies++)
  pipelining.on('error', () => undefined)
  let writes = 0
  const writeMore = (): void => {
    while (writes < 200 && !pipelining.destroyed && pipelining.write(MGET)) writes++
  }
  pipelining.on('drain', writeMore)
  writeMore()
  for (let i = 0; i < 500 && replies === 0; i++) await new Promise((r) => setTimeout(r, 10))
  expect(replies).toBeGreaterThan(0)
  // Their side stays open: what they see is the node's end of the connection.
  const bothEnded = Promise.all([halfOpen, pipelining].map((s) => new Promise((r) => (s.once('end', r), s.once('close', r)))))
  closed = node.close()
  expect(await closed).toBe(true)
  await bothEnded
  for (const s of [halfOpen, pipelining]) s.destroy()
})
