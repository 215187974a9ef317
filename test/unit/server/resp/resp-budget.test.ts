import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { nullLogger } from '../../../../server/log'
import { startNode, type RunningNode } from '../../../../server/node'
import { makeNodeDir } from '../../../../testkit/stores/make-store'
import { RawConnection } from '../../../../testkit/net/redis-cli'
import { makeTmp } from '../../../../testkit/stores/tmp'

/**
 * The request budget of a serving process on the RESP side: commands cut across reads are
 * held against it, and once it is spent a connection whose held bytes grow is refused
 * (-RO_BUSY) and closed, while commands that arrive whole are served as before. The node
 * runs in-process so the test can read what the budget holds.
 */
const tmp = makeTmp('rostore-resp-budget-')
const BUDGET = 2 << 20
const ARG = 10_000
/** A key of ARG bytes, absent from the store. */
const KEY = `users:${'k'.repeat(ARG - 6)}`
let node: RunningNode
let port: number

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
    resp: { port: 0 },
  })
  port = node.resp!.port
})

afterAll(async () => {
  await node?.close()
  tmp.cleanup()
})

const held = (): number => node.resp!.stats.requestBudget.held

/** Waits (bounded) for a condition the listener changes on socket events. */
async function until(what: string, pred: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !pred(); i++) await new Promise((r) => setTimeout(r, 10))
  if (!pred()) throw new Error(`never happened: ${what}`)
}

/** An MGET of 101 absent keys of 10,000 bytes, of which the first `sent` are sent. */
function startMget(c: RawConnection, sent: number): void {
  let text = `*102\r\n$4\r\nMGET\r\n`
  for (let i = 0; i < sent; i++) text += `$${ARG}\r\n${KEY}\r\n`
  c.send(text)
}

test('past the budget, a connection whose unfinished command grows gets -RO_BUSY and is closed; whole commands are served; the bytes come back', async () => {
  const refusalsBefore = node.resp!.stats.busyRefusals
  // Each holds ~0.9 MiB of an unfinished command: the third or fourth cannot fit in 2 MiB.
  const conns: RawConnection[] = []
  for (let i = 0; i < 4; i++) {
    const c = await RawConnection.open(port)
    conns.push(c)
    const before = held()
    startMget(c, 90)
    await until(`connection ${i} held or refused`, () => held() >= before + 90 * ARG || c.closed)
    expect(held()).toBeLessThanOrEqual(BUDGET)
  }
  const refused = conns.filter((c) => c.closed)
  expect(refused.length).toBeGreaterThan(0)
  for (const c of refused) expect(c.text).toBe("-RO_BUSY the node's buffers for requests are full; try again later\r\n")
  expect(node.resp!.stats.busyRefusals).toBe(refusalsBefore + refused.length)
  // Small commands hold nothing between reads: served while the budget is spent.
  const small = await RawConnection.open(port)
  small.send('GET users:key-3\r\n')
  expect(await small.until((t) => t.endsWith('value-3\r\n'))).toBe('$7\r\nvalue-3\r\n')
  // The budget is spent: the held commands cannot grow either. Once the others leave, the
  // one left completes and is answered.
  const [kept, ...others] = conns.filter((c) => !c.closed)
  for (const c of others) c.close()
  await until('the others given back', () => held() <= 100 * ARG)
  let rest = ''
  for (let i = 90; i < 101; i++) rest += `$${ARG}\r\n${KEY}\r\n`
  kept!.send(rest)
  const reply = await kept!.until((t) => t.length >= '*101\r\n'.length + 101 * '$-1\r\n'.length)
  expect(reply).toBe(`*101\r\n${'$-1\r\n'.repeat(101)}`)
  for (const c of [...conns, small]) c.close()
  await until('every byte given back', () => held() === 0)
})
