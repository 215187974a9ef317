import { execFile, spawn } from 'node:child_process'
import { createWriteStream } from 'node:fs'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { promisify } from 'node:util'
import { buildStore } from '../../builder/engines/local/build-job'
import { loadCluster, type Cluster } from '../../cluster/cluster'
import { pushStore } from '../../client/push/push-store'
import { NodeProcess, request, writeClusterFile } from '../../testkit/cluster/node-process'
import { reportFigures, waitUntil } from '../../testkit/cluster/reliability-kit'
import { makeTmp } from '../../testkit/stores/tmp'

/**
 * A push must not stall the node's reads. A version of 100,000 values
 * of 2 KiB (210 MB) is pushed to a fresh one-node cluster while a client reads in a loop.
 * Before the fix the node verified the version on its event loop and answered nothing for
 * as long as the record walk of a full verify takes (and a push of a bigger version failed
 * on a timed-out job poll).
 *
 * The bound is derived from the same machine in the same run, not from a wall-clock
 * figure: the test first runs the same full verify on the event loop of a plain node
 * process and measures the largest event-loop delay it causes (S, the record walk). Before the fix the node's largest
 * delay during the push was about S (the same walk, on the node's loop). After it, verify
 * runs in a worker thread and the largest delay is scheduling noise or the reader open
 * (100,000 index entries, about a sixth of S; it goes when the reader opens
 * asynchronously). The node's own measure (nodejs_eventloop_lag_max_seconds of
 * /metrics, reset at each scrape) must stay under S / 2 plus the node's largest delay
 * over as many reads just before the push (the noise other work on the machine adds to
 * both: a loaded CI machine starves a node of its core for tens of milliseconds), and the
 * largest gap between the client's answers (which adds the client's own scheduling) under S.
 */
jest.setTimeout(240_000)
const tmp = makeTmp('rostore-reads-during-push-')
const TOKEN = 'reads-during-push-token-0123'
const RECORDS = 100_000
const VALUE_BYTES = 2048
let cluster: Cluster
let node: NodeProcess

const value = (v: number, i: number): string => `v${v}|${i}|${'x'.repeat(VALUE_BYTES)}`

async function writeTsv(path: string, v: number): Promise<void> {
  const out = createWriteStream(path)
  for (let i = 0; i < RECORDS; i++) {
    if (!out.write(`key-${i}\t${value(v, i)}\n`)) await new Promise<void>((r) => out.once('drain', () => r()))
  }
  await new Promise<void>((resolve, reject) => {
    out.once('error', reject)
    out.end(() => resolve())
  })
}

async function build(v: number): Promise<string> {
  const input = join(tmp.dir, `in-${v}.tsv`)
  await writeTsv(input, v)
  const output = join(tmp.dir, `out-${v}`)
  await buildStore({ inputs: [input], format: 'tsv', cluster, store: 'st', output, version: v, replication: 1, workers: 1 })
  return output
}

/**
 * A full verify of `dir` run on the event loop of a plain node process (not jest's, whose
 * module sandbox makes it slower): its duration and the largest event-loop delay it
 * caused, in ms.
 */
async function inProcessVerifyStall(dir: string): Promise<{ verifyMs: number; stallMs: number }> {
  const script = `
    const { monitorEventLoopDelay } = require('node:perf_hooks')
    const { verifyStore } = require(${JSON.stringify(join(__dirname, '..', '..', 'formats', 'store', 'scan', 'verify.js'))})
    const delay = monitorEventLoopDelay({ resolution: 10 })
    delay.enable()
    const t0 = performance.now()
    verifyStore(process.argv[1]).then(() => {
      const verifyMs = performance.now() - t0
      // The delay is recorded when the late timer fires, after the verify.
      setTimeout(() => {
        delay.disable()
        process.stdout.write(JSON.stringify({ verifyMs, stallMs: delay.max / 1e6 }))
      }, 50)
    })`
  const { stdout } = await promisify(execFile)(process.execPath, ['-e', script, dir])
  return JSON.parse(stdout) as { verifyMs: number; stallMs: number }
}

interface ReaderFigures {
  reads: number
  errors: number
  wrong: number
  maxGap: number
}

/**
 * The reading client, in a process of its own (so the gaps it sees are the node's and the
 * machine's, not pauses of jest's own heap): one keep-alive connection, one GET after the
 * other, each value checked against the version its response names. It prints
 * `seen <version>` the first time it meets a version, and its figures as JSON once its
 * stdin closes. Bounded: it stops by itself after 200 s.
 */
function startReader(port: number): { seen: Set<string>; reads: () => number; stop: () => Promise<ReaderFigures> } {
  const script = `
    const { Agent, get } = require('node:http')
    const [port, records, valueBytes] = process.argv.slice(1).map(Number)
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    let stop = false
    process.stdin.on('end', () => (stop = true)).resume()
    const deadline = Date.now() + 200000
    const seen = new Set()
    const f = { reads: 0, errors: 0, wrong: 0, maxGap: 0 }
    ;(async () => {
      let last = performance.now()
      for (let i = 0; !stop && Date.now() < deadline; i = (i + 7919) % records) {
        const r = await new Promise((resolve) => {
          const req = get({ host: '127.0.0.1', port, path: '/stores/st/keys/key-' + i, agent }, (res) => {
            const parts = []
            res.on('data', (c) => parts.push(c))
            res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(parts).toString(), version: String(res.headers['x-rostore-version']) }))
          })
          req.on('error', () => resolve({ status: 0, body: '', version: '' }))
        })
        const now = performance.now()
        f.maxGap = Math.max(f.maxGap, now - last)
        last = now
        f.reads++
        if (f.reads % 100 === 0) process.stdout.write('reads ' + f.reads + '\\n')
        if (r.status !== 200) f.errors++
        else if (r.body !== 'v' + r.version + '|' + i + '|' + 'x'.repeat(valueBytes)) f.wrong++
        if (!seen.has(r.version)) {
          seen.add(r.version)
          process.stdout.write('seen ' + r.version + '\\n')
        }
      }
      agent.destroy()
      process.stdout.write(JSON.stringify(f) + '\\n')
    })()`
  const child = spawn(process.execPath, ['-e', script, String(port), String(RECORDS), String(VALUE_BYTES)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  const seen = new Set<string>()
  let reads = 0
  let out = ''
  child.stdout.setEncoding('utf8').on('data', (text: string) => {
    out += text
    for (const m of out.matchAll(/^seen (\S+)$/gm)) seen.add(m[1] as string)
    for (const m of out.matchAll(/^reads (\d+)$/gm)) reads = Math.max(reads, Number(m[1]))
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  return {
    seen,
    reads: () => reads,
    stop: async () => {
      child.stdin.end()
      await exited
      return JSON.parse(out.trim().split('\n').pop() ?? '{}') as ReaderFigures
    },
  }
}

/** The node's largest event-loop delay since the last scrape, in ms. */
async function lagMaxMs(): Promise<number> {
  const text = (await node.request('/metrics')).body.toString('utf8')
  const m = /^nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(text)
  if (!m) throw new Error('nodejs_eventloop_lag_max_seconds is missing from /metrics')
  return Number(m[1]) * 1000
}

beforeAll(async () => {
  const { path } = await writeClusterFile(tmp.dir, { nodes: 1 })
  cluster = await loadCluster(path)
  node = await NodeProcess.start({ clusterFile: path, nodeId: 0, dataDir: join(tmp.dir, 'data'), token: TOKEN })
})

afterAll(async () => {
  await node?.kill9()
  tmp.cleanup()
})

test('reads go on at full pace while the node fetches, verifies and installs a 210 MB version', async () => {
  const v1 = await build(1)
  const v2 = await build(2)
  expect((await pushStore({ cluster, store: 'st', from: v1, adminToken: TOKEN })).status).toBe('live')

  const { verifyMs, stallMs } = await inProcessVerifyStall(v2)

  const reader = startReader(node.port)
  await waitUntil(() => reader.seen.has('1'), 10_000)

  // The node's own noise floor under the same reads, before the push: the largest delay of
  // 1,000 reads (about as many as the push lasts), which other work on the machine sets.
  await lagMaxMs() // resets the node's maximum
  const from = reader.reads()
  await waitUntil(() => reader.reads() >= from + 1000, 60_000)
  const floor = await lagMaxMs()
  const bound = stallMs / 2 + floor
  const p0 = performance.now()
  const result = await pushStore({ cluster, store: 'st', from: v2, adminToken: TOKEN })
  const pushMs = performance.now() - p0
  const lag = await lagMaxMs()
  await waitUntil(() => reader.seen.has('2'), 10_000)
  const { reads, errors, wrong, maxGap } = await reader.stop()
  const versionsSeen = reader.seen

  reportFigures(
    'reads-during-push',
    `push of ${RECORDS} x ${VALUE_BYTES} B in ${pushMs.toFixed(0)} ms: node event-loop delay max ${lag.toFixed(0)} ms (${floor.toFixed(0)} before the push), ` +
      `largest gap between answers ${maxGap.toFixed(0)} ms; in-process verify ${verifyMs.toFixed(0)} ms stalled its loop ${stallMs.toFixed(0)} ms; ` +
      `${reads} reads, ${errors} errors, ${wrong} wrong`,
    {
      records: RECORDS,
      valueBytes: VALUE_BYTES,
      pushMs,
      verifyMs,
      stallMs,
      lagMaxMs: lag,
      lagFloorMs: floor,
      maxGapMs: maxGap,
      reads,
      errors,
      wrong,
    },
  )
  expect(result.status).toBe('live')
  expect([...versionsSeen].sort()).toEqual(['1', '2'])
  expect(errors).toBe(0)
  expect(wrong).toBe(0)
  expect(lag).toBeLessThan(bound)
  expect(maxGap).toBeLessThan(stallMs)
  // The metric the bound is read from is part of the node's documented /metrics.
  expect((await request(`${node.url}/metrics`)).body.toString()).toMatch(/^nodejs_eventloop_lag_p99_seconds /m)
})
