import { writeFileSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { join } from 'node:path'
import { encodeKeys, decodeValues } from '../../../formats/wire/multiget'
import { nullLogger } from '../../../server/log'
import { startNode, type RunningNode } from '../../../server/node'
import { makeNodeDir } from '../../../testkit/stores/make-store'
import { request } from '../../../testkit/cluster/node-process'
import { makeTmp } from '../../../testkit/stores/tmp'

/**
 * The request budget of a serving process on the HTTP side: multi-get bodies over 64 KiB
 * take their declared length from it before they are read; once it is spent the next one
 * gets 503 RO_BUSY with Retry-After, small multi-gets are served, and a body that never
 * finishes is cut by the request timeout, giving its bytes back.
 */
const tmp = makeTmp('rostore-body-budget-')
const BUDGET = 2 << 20
const BODY = 1 << 20
let node: RunningNode

beforeAll(async () => {
  const dataDir = join(tmp.dir, 'data')
  await makeNodeDir(
    join(dataDir, 'users', 'version-1'),
    Array.from({ length: 20 }, (_, i): [string, string] => [`key-${i}`, `value-${i}`]),
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
    maxBufferedRequestBytes: BUDGET,
    timeouts: { headersMs: 1000, requestMs: 2000, checkIntervalMs: 100 },
  })
})

afterAll(async () => {
  await node?.close()
  tmp.cleanup()
})

async function heldBytes(): Promise<number> {
  const text = (await request(`${node.url}/metrics`)).body.toString()
  const m = /^rostore_buffered_request_bytes (\d+)$/m.exec(text)
  if (!m) throw new Error('no rostore_buffered_request_bytes in /metrics')
  return Number(m[1])
}

/** A multi-get declaring BODY bytes, of which `sent` are sent; resolves with what came back once the node closes. */
function unfinished(sent: number): { socket: Socket; reply: Promise<string> } {
  const socket = connect(node.port, '127.0.0.1')
  const got: Buffer[] = []
  socket.on('data', (d: Buffer) => got.push(d))
  socket.on('error', () => undefined)
  const reply = new Promise<string>((resolve) => socket.on('close', () => resolve(Buffer.concat(got).toString('latin1'))))
  socket.write(`POST /stores/users/multi-get HTTP/1.1\r\nHost: x\r\nContent-Length: ${BODY}\r\n\r\n`)
  socket.write(Buffer.alloc(sent))
  return { socket, reply }
}

async function until(what: string, pred: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (await pred()) return
    await new Promise((r) => setTimeout(r, 20))
  }
  throw new Error(`never happened: ${what}`)
}

test('bodies past the budget get 503 RO_BUSY with Retry-After; small multi-gets go on; unfinished bodies time out and give their bytes back', async () => {
  const holders = [unfinished(100_000), unfinished(100_000)]
  await until('two bodies charged', async () => (await heldBytes()) === 2 * BODY)
  const refused = unfinished(100_000)
  const text = await refused.reply
  expect(text).toMatch(/^HTTP\/1\.1 503 /)
  expect(text).toMatch(/\r\nretry-after: 1\r\n/i)
  expect(text).toContain('"code":"RO_BUSY"')
  expect(await heldBytes()).toBe(2 * BODY)

  // A multi-get of a few keys is not charged: answered while the budget is spent.
  const keys = ['key-1', 'key-2']
  const small = await request(`${node.url}/stores/users/multi-get`, { method: 'POST', body: encodeKeys(keys) })
  expect(small.status).toBe(200)
  expect(decodeValues(small.body, 2).map((v) => v?.toString())).toEqual(['value-1', 'value-2'])

  // The request timeout cuts the bodies that never finish, and their bytes come back.
  for (const h of holders) expect(await h.reply).toMatch(/^(HTTP\/1\.1 408 |$)/)
  await until('the bytes given back', async () => (await heldBytes()) === 0)
  // A large body fits again: 5,002 keys, ~1 MiB.
  const many = [...keys, ...Array.from({ length: 5000 }, (_, i) => `absent-${i}-`.padEnd(200, 'x'))]
  const big = await request(`${node.url}/stores/users/multi-get`, { method: 'POST', body: encodeKeys(many) })
  expect(big.status).toBe(200)
  expect(
    decodeValues(big.body, many.length)
      .slice(0, 3)
      .map((v) => v?.toString()),
  ).toEqual(['value-1', 'value-2', undefined])
})
