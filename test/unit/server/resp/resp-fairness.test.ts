import { writeFileSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { join } from 'node:path'
import { nullLogger } from '../../../../server/log'
import { startNode, type RunningNode } from '../../../../server/node'
import { makeNodeDir } from '../../../../testkit/make-store'
import { makeTmp } from '../../../../testkit/tmp'

/**
 * Connections share a serving process's time: clients pipelining 10,000-key MGETs take one
 * of them per turn of the event loop, so a client of small commands is answered while their
 * pipelines are still running, not after them. And a node stops once the work it took is
 * done, whatever its clients do with their side of the connection. The node runs in-process;
 * the light client reads the node's own count of keys read (INFO) to see how many MGETs ran
 * between two of its replies.
 */
jest.setTimeout(60_000)
const tmp = makeTmp('rostore-resp-fair-')
const KEYS = 2000
const MGET_KEYS = 10_000
const HEAVY = 4
const PIPELINE = 30
let node: RunningNode
let port: number
let closed: Promise<boolean> | undefined

beforeAll(async () => {
  const dataDir = join(tmp.dir, 'data')
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
  tmp.cleanup()
})

const MGET = Buffer.from(
  `*${MGET_KEYS + 1}\r\n$4\r\nMGET\r\n${Array.from({ length: MGET_KEYS }, (_, i) => {
    const k = `users:key-${i % KEYS}`
    return `$${k.length}\r\n${k}\r\n`
  }).join('')}`,
)

function open(opts: { allowHalfOpen?: boolean } = {}): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port, allowHalfOpen: opts.allowHalfOpen ?? false }, () => resolve(s))
    s.once('error', reject)
  })
}

/** Calls `onReply` for every MGET reply and `onEcho(n)` for every `ECHO seq-<n>` reply a heavy client receives, in order. */
function countReplies(s: Socket, onReply: () => void, onEcho: (n: number) => void = () => undefined): void {
  let tail = ''
  const marks = /\$\d+\r\nseq-(\d+)\r\n|\*10000\r\n/g
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

/** ECHO seq-<n>: a reply no value holds, to see the order of a pipeline's replies. */
function echo(n: number): Buffer {
  const m = `seq-${n}`
  return Buffer.from(`*2\r\n$4\r\nECHO\r\n$${m.length}\r\n${m}\r\n`)
}

/** One request/reply of the light client: the MGETs the node had run when it answered (INFO's keys read / MGET_KEYS). */
function mgetsRun(s: Socket): Promise<number> {
  return new Promise((resolve) => {
    let text = ''
    const onData = (d: Buffer): void => {
      text += d.toString('latin1')
      const m = /rostore_local_keys:(\d+)\r\n/.exec(text)
      // The reply is one bulk string; its last line ends it.
      if (m && text.endsWith('\r\n\r\n')) {
        s.off('data', onData)
        resolve(Number(m[1]) / MGET_KEYS)
      }
    }
    s.on('data', onData)
    s.write('INFO stats\r\n')
  })
}

test('a client of small commands is answered between the MGETs of clients pipelining 10,000-key MGETs, each of which gets all its replies in order', async () => {
  const heavy = await Promise.all(Array.from({ length: HEAVY }, () => open()))
  let received = 0
  const echoes = heavy.map((): number[] => [])
  heavy.forEach((s, i) =>
    countReplies(
      s,
      () => received++,
      (n) => echoes[i]!.push(n),
    ),
  )
  const light = await open()
  const start = await mgetsRun(light)
  for (const s of heavy) s.write(Buffer.concat(Array.from({ length: PIPELINE }, (_, n) => [MGET, echo(n)]).flat()))
  // Between two of its replies, how many MGETs the node ran.
  const between: number[] = []
  let last = start
  for (let i = 0; i < 10_000 && received < HEAVY * PIPELINE; i++) {
    const now = await mgetsRun(light)
    between.push(now - last)
    last = now
  }
  // The light client kept being answered while the pipelines ran.
  expect(between.filter((n) => n > 0).length).toBeGreaterThanOrEqual(5)
  // A turn runs at most one of these MGETs per heavy connection as it reads and one as it
  // resumes; between two light replies pass at most two turns. Read greedily (every read of
  // every connection at once), a heavy client ran ~9 of them per turn.
  if (process.env.ROSTORE_SHOW_FIGURES) console.log(JSON.stringify({ between }))
  expect(Math.max(...between)).toBeLessThanOrEqual(4 * HEAVY)
  // Every pipeline got all its replies, in the order of its commands.
  for (let i = 0; i < HEAVY; i++) {
    for (let n = 0; n < 1000 && echoes[i]!.length < PIPELINE; n++) await new Promise((r) => setTimeout(r, 10))
    expect(echoes[i]).toEqual(Array.from({ length: PIPELINE }, (_, n) => n))
  }
  for (const s of heavy) s.destroy()
  light.destroy()
})

test('stop: replies to what was read go out, then the node stops although clients keep their side open or keep sending', async () => {
  // Half-open: answers PING, then never closes its side.
  const halfOpen = await open({ allowHalfOpen: true })
  const pong = new Promise<void>((resolve) => halfOpen.once('data', () => resolve()))
  halfOpen.write('PING\r\n')
  await pong
  // Keeps pipelining MGETs while the node stops, and never closes its side either.
  const pipelining = await open({ allowHalfOpen: true })
  let replies = 0
  countReplies(pipelining, () => replies++)
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
