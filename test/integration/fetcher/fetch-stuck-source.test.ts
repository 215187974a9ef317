import { execFileSync } from 'node:child_process'
import { randomBytes, pbkdf2 } from 'node:crypto'
import { closeSync, constants, existsSync, openSync, readdirSync } from 'node:fs'
import { mkdir, open, readFile, realpath, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { isStoreError } from '../../../common/errors'
import { fetchVersion } from '../../../fetcher/fetch-job'
import { FsGate } from '../../../fetcher/transfer/fs-gate'
import type { FileSourceCalls } from '../../../fetcher/sources/file'
import { Jobs } from '../../../server/jobs/jobs'
import { waitUntil } from '../../../testkit/cluster/reliability-kit'
import { makeTmp } from '../../../testkit/stores/tmp'

/**
 * A source whose file-system calls hang (a hung NFS mount) must not
 * take the node's other work with it. A FIFO opened in blocking mode stands in for the
 * dead mount: open() blocks in a libuv pool thread until a writer comes, as a read on a
 * hung NFS server blocks until the server answers. (FileSource itself opens with
 * O_NONBLOCK and refuses a FIFO at once, see test/reliability/stuck-source.test.ts; here
 * its `calls` seam gets a blocking open, to hold pool threads for real.)
 *
 * What must hold: at most one blocked call per fetch and the node-wide limit (2 of the 4
 * pool threads) in all; other pool work goes on; a cancel or a stall answers at once while
 * the call stays stuck; what the call returns late is closed; nothing crashes.
 */

jest.setTimeout(60_000)
const tmp = makeTmp('rostore-stuck-src-')
/** The opens started so far (each one of a FIFO blocks its pool thread until a writer comes). */
let opensStarted = 0
const blockingOpen: FileSourceCalls = {
  realpath: (p) => realpath(p),
  open: (p, flags) => {
    opensStarted++
    return open(p, flags & ~constants.O_NONBLOCK)
  },
}
const fifos: string[] = []

/** A build output root whose node-0/metadata.json is a FIFO nobody writes to. */
async function stuckRoot(name: string): Promise<{ root: string; fifo: string }> {
  const root = join(tmp.dir, name)
  await mkdir(join(root, 'node-0'), { recursive: true })
  const fifo = join(root, 'node-0', 'metadata.json')
  execFileSync('mkfifo', [fifo])
  fifos.push(fifo)
  return { root, fifo }
}

/** Opens a writer without blocking: succeeds only while a reader is in open() (or has it open). */
function releaseReader(fifo: string): boolean {
  try {
    closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK))
    return true
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENXIO') return false // no reader
    throw err
  }
}

function openFds(): number {
  return readdirSync('/proc/self/fd').length
}

afterAll(() => {
  // Never leave a pool thread blocked behind us: that would hang the test process.
  for (const f of fifos) if (existsSync(f)) releaseReader(f)
  tmp.cleanup()
})

test('a stalled open that returns later is closed, and nothing crashes (a FIFO once crashed the node here)', async () => {
  const { root, fifo } = await stuckRoot('late-open')
  const gate = new FsGate(2)
  const fdsBefore = openFds()
  const err = await fetchVersion({
    source: root,
    nodeId: 0,
    destDir: join(tmp.dir, 'dest-late'),
    stallTimeoutMs: 200,
    retries: 0,
    fsGate: gate,
    fileCalls: blockingOpen,
  }).catch((e: unknown) => e)
  expect(err).toMatchObject({ code: 'RO_FETCH_FAILED', message: expect.stringContaining('no data for 200 ms') })
  // The fetch is over; its open() is still blocked in the kernel, holding one slot.
  expect(gate.stats).toMatchObject({ inFlight: 1, abandoned: 1 })
  expect(existsSync(join(tmp.dir, 'dest-late'))).toBe(false)
  // A writer comes: the open returns into a fetch that gave up. Before the fix this
  // created a read stream with an aborted signal whose AbortError killed the process.
  expect(await waitUntil(() => releaseReader(fifo), 30_000)).toBe(true)
  expect(await waitUntil(() => gate.stats.inFlight === 0, 30_000)).toBe(true)
  expect(await waitUntil(() => openFds() <= fdsBefore, 30_000)).toBe(true)
  expect(gate.stats.abandoned).toBe(0)
})

test('stuck calls hold at most the node-wide limit of pool threads; other pool work goes on; cancel answers at once', async () => {
  const gate = new FsGate(2) // of libuv's 4 threads in this process
  const roots = await Promise.all([0, 1, 2, 3].map((i) => stuckRoot(`many-${i}`)))
  const controllers = roots.map(() => new AbortController())
  const opensBefore = opensStarted
  const fetches = roots.map(({ root }, i) =>
    fetchVersion({
      source: root,
      nodeId: 0,
      destDir: join(tmp.dir, `dest-many-${i}`),
      stallTimeoutMs: 120_000,
      retries: 0,
      fsGate: gate,
      fileCalls: blockingOpen,
      signal: controllers[i]!.signal,
    }).catch((e: unknown) => e),
  )
  expect(await waitUntil(() => opensStarted - opensBefore === 2 && gate.stats.inFlight === 2 && gate.stats.waiting === 2, 30_000)).toBe(
    true,
  )
  // Two pool threads are blocked for good; the other two still serve everything else.
  const file = join(tmp.dir, 'other-work')
  const bytes = randomBytes(1 << 20)
  await writeFile(file, bytes)
  for (let i = 0; i < 20; i++) {
    expect((await readFile(file)).equals(bytes)).toBe(true)
    expect((await stat(file)).size).toBe(bytes.length)
  }
  await Promise.all([0, 1, 2, 3].map((i) => promisify(pbkdf2)(`p${i}`, 'salt', 1000, 32, 'sha256')))
  // Cancel: every fetch answers RO_ABORTED now, although two open() calls are still stuck.
  for (const c of controllers) c.abort()
  const results = await Promise.all(fetches)
  for (const r of results) expect(isStoreError(r, 'RO_ABORTED')).toBe(true)
  expect(gate.stats).toMatchObject({ inFlight: 2, abandoned: 2, waiting: 0 })
  // Exactly two FIFOs have a reader blocked in open(); the two waiting fetches never reached theirs.
  const released = new Set<number>()
  const releaseStuck = (): boolean => {
    roots.forEach(({ fifo }, i) => !released.has(i) && releaseReader(fifo) && released.add(i))
    return released.size >= 2
  }
  expect(await waitUntil(releaseStuck, 30_000)).toBe(true)
  expect(released.size).toBe(2)
  expect(await waitUntil(() => gate.stats.inFlight === 0, 30_000)).toBe(true)
  for (const { fifo } of roots) expect(releaseReader(fifo)).toBe(false) // nobody holds them open
})

test('a cancelled job ends "cancelled" while its file-system call is still stuck', async () => {
  const gate = new FsGate(2)
  const { root, fifo } = await stuckRoot('job')
  const jobs = new Jobs()
  const dest = join(tmp.dir, 'dest-job')
  const opensBefore = opensStarted
  const job = jobs.start('fetch', 'users', ({ signal }) =>
    fetchVersion({ source: root, nodeId: 0, destDir: dest, stallTimeoutMs: 120_000, fsGate: gate, fileCalls: blockingOpen, signal }),
  )
  expect(await waitUntil(() => opensStarted > opensBefore && gate.stats.inFlight === 1, 30_000)).toBe(true)
  jobs.cancel(job.id)
  expect(await jobs.wait(job.id)).toMatchObject({ state: 'cancelled', error: { code: 'RO_ABORTED' } })
  expect(gate.stats).toMatchObject({ inFlight: 1, abandoned: 1 })
  expect(existsSync(dest)).toBe(false)
  expect(await waitUntil(() => releaseReader(fifo), 30_000)).toBe(true)
  expect(await waitUntil(() => gate.stats.inFlight === 0, 30_000)).toBe(true)
})
