import { readdir, readlink, writeFile } from 'node:fs/promises'
import { request, type IncomingMessage } from 'node:http'
import { join } from 'node:path'
import { buildStore } from '../../../builder/engines/local/build-job'
import { loadCluster } from '../../../cluster/cluster'
import { startSingleNode, type NodeProcess } from '../../../testkit/cluster/node-process'
import { makeTmp } from '../../../testkit/stores/tmp'

/**
 * The streaming throttle's accuracy: within ±10% of the limit at 5 and
 * 20 MB/s. The limits are far below what loopback carries here even when the machine is
 * busy (hundreds of MB/s), so the lower bound measures the throttle, not the machine; the
 * upper bound holds by construction of the token bucket. The rate is taken from the first
 * byte to the last, over enough bytes that the bucket's initial burst (1/20 s of the
 * rate) stays below 2% of them. Wall-clock bounds in a test, against the house rule, because
 * the issue asks for them here; bench/versions/dump-bench.ts measures the same in `npm run bench`.
 */
jest.setTimeout(180_000)
const tmp = makeTmp()
const token = 'throttle-token-0123456789'
let node: NodeProcess

beforeAll(async () => {
  node = await startSingleNode({
    dir: tmp.dir,
    token,
    workers: 2,
    extraArgs: ['--stream-max-bytes-per-sec', '20000000', '--send-timeout-ms', '1500'],
  })
  const input = join(tmp.dir, 'in.tsv')
  const value = 'z'.repeat(10_000)
  await writeFile(input, Array.from({ length: 5000 }, (_, i) => `k${i}\t${value}\n`).join(''))
  const cluster = await loadCluster(join(tmp.dir, 'cluster.json'))
  await buildStore({ inputs: [input], format: 'tsv', cluster, store: 'st', output: join(tmp.dir, 'b'), version: 1, workers: 1, chunks: 2 })
  await node.install('st', join(tmp.dir, 'b'), { swap: true })
  // One stream first: the first one of a fresh process runs cold (JIT, page cache) and on
  // this busy machine may not reach 20 MB/s at all; the throttle is measured warm.
  await measure('format=binary')
})

afterAll(async () => {
  if (node?.running) await node.kill9()
  tmp.cleanup()
})

/** Bytes received and the seconds between the first and the last of them. */
async function measure(query: string): Promise<{ bytes: number; seconds: number }> {
  const res = await new Promise<IncomingMessage>((resolve, reject) =>
    request({
      host: '127.0.0.1',
      port: node.port,
      path: `/admin/stores/st/dump/entries?${query}`,
      headers: { authorization: `Bearer ${token}` },
    })
      .on('response', resolve)
      .on('error', reject)
      .end(),
  )
  expect(res.statusCode).toBe(200)
  let first = 0n
  let last = 0n
  let bytes = 0
  for await (const chunk of res as AsyncIterable<Buffer>) {
    last = process.hrtime.bigint()
    // The first chunk marks the start: the bytes counted are those sent after it.
    if (first === 0n) first = last
    else bytes += chunk.length
  }
  return { bytes, seconds: Number(last - first) / 1e9 }
}

test.each([
  ['the node-wide limit, 20 MB/s', 'format=binary', 20_000_000],
  ['a per-request limit of 5 MB/s below it', 'format=binary&partitions=0&maxBytesPerSec=5000000', 5_000_000],
])('%s: within ±10%', async (_name, query, limit) => {
  const { bytes, seconds } = await measure(query)
  expect(bytes).toBeGreaterThan(limit) // more than a second of data
  const rate = bytes / seconds
  expect(rate).toBeLessThanOrEqual(limit * 1.1)
  expect(rate).toBeGreaterThanOrEqual(limit * 0.9)
})

/** How many of a version's chunk files the process has open. */
async function openChunkFiles(pid: number): Promise<number> {
  let n = 0
  for (const fd of await readdir(`/proc/${pid}/fd`).catch(() => [])) {
    // Format 1 (<c>.data) or format 2 (p<P>-c<C>.data) chunk files.
    if (/\/version-\d+\/(p\d+-c)?\d+\.(index|data)$/.test(await readlink(`/proc/${pid}/fd/${fd}`).catch(() => ''))) n++
  }
  return n
}

test('a client that stops reading is cut after --send-timeout-ms, and the stream lets go of its files', async () => {
  const pid = node.child.pid as number
  const req = request({
    host: '127.0.0.1',
    port: node.port,
    path: '/admin/stores/st/dump/entries',
    headers: { authorization: `Bearer ${token}` },
  })
  const res = await new Promise<IncomingMessage>((resolve) => req.on('response', resolve).end())
  expect(res.statusCode).toBe(200)
  // Stop reading: the socket buffers fill and the stream waits for a drain that never comes.
  res.pause()
  for (let i = 0; (await openChunkFiles(pid)) === 0; i++) {
    if (i > 200) throw new Error('the stream never opened its files')
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  // 50 MB do not fit in loopback's socket buffers: without the timeout, the files stay open.
  for (let i = 0; (await openChunkFiles(pid)) > 0; i++) {
    if (i > 1000) throw new Error('the stalled stream still holds its files')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  // What was buffered arrives, then the connection ends without the end frame.
  const ended = new Promise<string>((resolve) => {
    res.once('aborted', () => resolve('aborted'))
    res.once('end', () => resolve(res.complete ? 'complete' : 'aborted'))
  })
  res.resume()
  expect(await ended).toBe('aborted')
})
