import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { join } from 'node:path'
import { decodeValues, encodeKeys } from '../../formats/wire/multiget'
import { makeNodeDir } from '../../testkit/stores/make-store'
import { request, startSingleNode, type NodeProcess } from '../../testkit/cluster/node-process'
import { reportFigures, waitUntil } from '../../testkit/cluster/reliability-kit'
import { makeTmp } from '../../testkit/stores/tmp'

/**
 * A request of a few hundred bytes naming large values must not make
 * the node hold them all. 16 clients each ask one multi-get of 48 values of 1 MiB (a
 * 48 MiB answer) and never read it. Before the fix the node built each answer whole
 * (values plus one framed copy: ~96 MiB per request, 1.5 GiB in all) and held it until TCP
 * gave up. Now it reads a 1 MiB window ahead of what the socket took and waits, so each
 * stalled request holds a few MiB; the loopback socket buffers hold the rest, outside the
 * node's heap.
 *
 * Stated bound: the node's RSS while the 16 stall stays below its RSS after warm-up plus
 * 16 x 6 MiB. Meanwhile another client's gets and multi-gets all succeed, and after
 * --send-timeout-ms without progress the node cuts the 16 connections (each counted as
 * finished in /metrics).
 */

jest.setTimeout(120_000)
const tmp = makeTmp('rostore-read-memory-')
const TOKEN = 'read-memory-token-0123456789'
const MIB = 1 << 20
const BIG = 64
const STALLED = 16
const KEYS_PER_STALL = 48
const PER_REQUEST_BOUND = 6 * MIB
let node: NodeProcess
const values = new Map<string, Buffer>()

function rssBytes(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  if (!m) throw new Error(`no VmRSS for ${pid}`)
  return Number(m[1]) * 1024
}

beforeAll(async () => {
  for (let i = 0; i < BIG; i++) values.set(`big-${i}`, randomBytes(MIB))
  for (let i = 0; i < 1000; i++) values.set(`small-${i}`, Buffer.from(`small value ${i}`))
  const src = join(tmp.dir, 'src')
  await makeNodeDir(src, values.entries(), { store: 'st', version: 1, chunks: 4 })
  node = await startSingleNode({ dir: tmp.dir, token: TOKEN, extraArgs: ['--send-timeout-ms', '3000'] })
  await node.install('st', src, { swap: true })
})

afterAll(async () => {
  await node?.kill9()
  tmp.cleanup()
})

async function multiGet(keys: readonly string[]): Promise<(Buffer | undefined)[]> {
  const r = await request(`${node.url}/stores/st/multi-get`, { method: 'POST', body: encodeKeys(keys) })
  if (r.status !== 200) throw new Error(`multi-get: ${r.status} ${r.body.toString().slice(0, 200)}`)
  return decodeValues(r.body, keys.length)
}

/** A multi-get sent on a raw socket whose answer is never read (resolves once it started). */
async function stalledMultiGet(keys: readonly string[]): Promise<Socket> {
  const body = encodeKeys(keys)
  const s = connect(node.port, '127.0.0.1')
  s.on('error', () => undefined)
  await new Promise<void>((resolve) => {
    s.once('data', () => {
      s.pause()
      resolve()
    })
    s.write(`POST /stores/st/multi-get HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n`)
    s.write(body)
  })
  return s
}

async function finishedMultiGets(): Promise<number> {
  const text = (await request(`${node.url}/metrics`)).body.toString()
  let n = 0
  for (const m of text.matchAll(/^rostore_requests_total\{[^}]*op="multi_get"[^}]*\} (\d+)$/gm)) n += Number(m[1])
  return n
}

test(`${STALLED} multi-gets of ${KEYS_PER_STALL} MiB that are never read keep the node's memory bounded; other clients are served`, async () => {
  // Warm-up: complete reads of the same shape, so the heap has grown to its working size.
  const bigKeys = Array.from({ length: KEYS_PER_STALL }, (_, i) => `big-${i % BIG}`)
  for (let i = 0; i < 3; i++) expect((await multiGet(bigKeys)).length).toBe(KEYS_PER_STALL)
  const finishedBefore = await finishedMultiGets()
  const baseline = rssBytes(node.pid)
  const bound = baseline + STALLED * PER_REQUEST_BOUND

  const stalled = await Promise.all(Array.from({ length: STALLED }, () => stalledMultiGet(bigKeys)))
  let peak = rssBytes(node.pid)
  let goodReads = 0
  const failures: string[] = []
  for (let round = 0; round < 40; round++) {
    const i = (round * 37) % 1000
    const g = await request(`${node.url}/stores/st/keys/small-${i}`)
    if (g.status !== 200 || g.body.toString() !== `small value ${i}`) failures.push(`get small-${i}: ${g.status}`)
    const keys = [`small-${i}`, `big-${round % BIG}`, 'absent', `big-${(round + 1) % BIG}`]
    const got = await multiGet(keys)
    keys.forEach((k, j) => {
      const want = values.get(k)
      if (!(want === undefined ? got[j] === undefined : got[j]?.equals(want))) failures.push(`multi-get ${k}`)
    })
    goodReads += 5
    peak = Math.max(peak, rssBytes(node.pid))
  }

  // Without progress for --send-timeout-ms, the node cuts the stalled connections: each
  // of their requests ends (counted in /metrics when its response closes).
  const cut = await waitUntil(async () => (await finishedMultiGets()) >= finishedBefore + 40 + STALLED, 30_000, 200)
  for (const s of stalled) s.destroy()

  reportFigures(
    'read-memory',
    `${STALLED} stalled multi-gets of ${KEYS_PER_STALL} MiB: node RSS ${(baseline / MIB).toFixed(0)} MiB after warm-up, peak ${(peak / MIB).toFixed(0)} MiB ` +
      `(bound ${(bound / MIB).toFixed(0)} MiB = warm-up + ${STALLED} x ${PER_REQUEST_BOUND / MIB} MiB); ${goodReads} reads by another client, ${failures.length} failed; stalled connections cut: ${cut}`,
    { baselineBytes: baseline, peakBytes: peak, boundBytes: bound, goodReads, failures: failures.length, cut },
  )
  expect(failures).toEqual([])
  expect(peak).toBeLessThan(bound)
  expect(cut).toBe(true)
})
