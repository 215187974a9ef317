import { createServer, type Server, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import type { Cluster } from '../../../../cluster/cluster'
import { RespRequestParser } from '../../../../formats/wire/resp-request'
import { RespWriter } from '../../../../formats/wire/resp-writer'
import { Forwarder, getsCommand, type ForwardResult } from '../../../../server/resp/forwarder'
import { RespStats } from '../../../../server/resp/resp-stats'

/**
 * The forwarder against small RESP servers on loopback that play other nodes: each
 * answers ROSTORE.GETS with a chosen version, an error, silence, or a dropped connection,
 * and records the commands it got.
 */
type Behaviour = { kind: 'answer'; version: number } | { kind: 'error'; text: string } | { kind: 'silent' } | { kind: 'drop' }

class FakeNode {
  readonly commands: string[][] = []
  accepted = 0
  behaviour: Behaviour = { kind: 'answer', version: 5 }
  private readonly sockets = new Set<Socket>()

  private constructor(
    readonly server: Server,
    readonly id: number,
  ) {}

  static async start(id: number): Promise<FakeNode> {
    const server = createServer()
    const node = new FakeNode(server, id)
    server.on('connection', (s) => node.serve(s))
    await new Promise<void>((r) => server.listen({ host: '127.0.0.1', port: 0 }, r))
    return node
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port
  }

  private serve(s: Socket): void {
    this.accepted++
    this.sockets.add(s)
    s.on('close', () => this.sockets.delete(s))
    s.on('error', () => undefined)
    const p = new RespRequestParser()
    s.on('data', (chunk: Buffer) => {
      p.push(chunk)
      const w = new RespWriter()
      while (p.next()) {
        const args = Array.from({ length: p.argc }, (_, i) => p.args.toString('latin1', p.starts[i], p.ends[i]))
        this.commands.push(args)
        if (args[0] === 'AUTH') {
          w.simple('OK')
          continue
        }
        const b = this.behaviour
        if (b.kind === 'drop') {
          s.destroy()
          return
        }
        if (b.kind === 'silent') continue
        if (b.kind === 'error') {
          w.error(b.text)
          continue
        }
        w.array(args.length - 1)
        w.integer(b.version)
        for (const k of args.slice(2)) {
          if (k.startsWith('absent')) w.nil(2)
          else w.bulkText(`node${this.id}:v${b.version}:${k}`)
        }
      }
      s.write(Buffer.from(w.take()))
    })
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy()
    await new Promise<void>((r) => this.server.close(() => r()))
  }
}

let fakes: FakeNode[] = []
let stats: RespStats
let forwarder: Forwarder | undefined

beforeEach(async () => {
  fakes = await Promise.all([1, 2, 3].map((id) => FakeNode.start(id)))
  stats = new RespStats(1)
})

afterEach(async () => {
  forwarder?.close()
  forwarder = undefined
  await Promise.all(fakes.map((f) => f.stop()))
})

function make(opts: { readToken?: string; timeoutMs?: number; retryMs?: number; noResp?: number[] } = {}): Forwarder {
  const cluster: Cluster = {
    name: 't',
    nodes: [
      { id: 0, host: '127.0.0.1', port: 1, partitions: [0] },
      ...fakes.map((f) =>
        opts.noResp?.includes(f.id)
          ? { id: f.id, host: '127.0.0.1', port: 2 + f.id, partitions: [f.id] }
          : { id: f.id, host: '127.0.0.1', port: 2 + f.id, respPort: f.port, partitions: [f.id] },
      ),
    ],
  }
  forwarder = new Forwarder({
    cluster,
    nodeId: 0,
    readToken: opts.readToken,
    timeoutMs: opts.timeoutMs ?? 2000,
    connections: 2,
    retryMs: opts.retryMs ?? 1000,
    stats,
  })
  return forwarder
}

function fetch(f: Forwarder, keys: string[], targets: number[], minVersion = 0): Promise<ForwardResult> {
  return new Promise((resolve, reject) =>
    f.fetch(
      getsCommand(
        'st',
        keys.map((k) => Buffer.from(k)),
      ),
      keys.length,
      targets,
      minVersion,
      (err, r) => (err ? reject(err) : resolve(r!)),
    ),
  )
}

const text = (r: ForwardResult): (string | undefined)[] => r.values.map((v) => v?.toString())

test('the master answers; values in order, absent keys undefined, one command for the batch', async () => {
  const f = make()
  const r = await fetch(f, ['a', 'absent-1', 'b'], [1, 2])
  expect(r.version).toBe(5)
  expect(text(r)).toEqual(['node1:v5:a', undefined, 'node1:v5:b'])
  expect(fakes[0]!.commands).toEqual([['ROSTORE.GETS', 'st', 'a', 'absent-1', 'b']])
  expect(fakes[1]!.commands).toEqual([])
  expect(stats.forwardedKeys).toBe(3)
  expect(stats.forwardFailures).toBe(0)
})

test('error replies, dropped connections and silence each pass to the next replica', async () => {
  fakes[0]!.behaviour = { kind: 'error', text: 'RO_UNAVAILABLE store st is marked stale on node 1' }
  expect(text(await fetch(make(), ['a'], [1, 2]))).toEqual(['node2:v5:a'])
  forwarder!.close()
  fakes[0]!.behaviour = { kind: 'drop' }
  expect(text(await fetch(make(), ['a'], [1, 2]))).toEqual(['node2:v5:a'])
  forwarder!.close()
  fakes[0]!.behaviour = { kind: 'silent' }
  expect(text(await fetch(make({ timeoutMs: 200 }), ['a'], [1, 3]))).toEqual(['node3:v5:a'])
  expect(stats.forwardFailures).toBe(3)
})

test('a replica serving an older version than this node is passed over; if all are older, the newest answer wins', async () => {
  fakes[0]!.behaviour = { kind: 'answer', version: 3 }
  fakes[1]!.behaviour = { kind: 'answer', version: 7 }
  expect(await fetch(make(), ['a'], [1, 2], 6)).toMatchObject({ version: 7 })
  fakes[1]!.behaviour = { kind: 'answer', version: 4 }
  fakes[2]!.behaviour = { kind: 'answer', version: 2 }
  const r = await fetch(forwarder!, ['a'], [1, 2, 3], 6)
  expect(r.version).toBe(4)
  expect(text(r)).toEqual(['node2:v4:a'])
})

test('no replica answers: RO_UNAVAILABLE naming every node tried', async () => {
  for (const n of fakes) n.behaviour = { kind: 'error', text: 'RO_NOT_FOUND no store st on this node' }
  await expect(fetch(make({ noResp: [3] }), ['a'], [1, 2, 3])).rejects.toMatchObject({
    code: 'RO_UNAVAILABLE',
    message: expect.stringMatching(/node 1: RO_NOT_FOUND.*node 2: RO_NOT_FOUND.*node 3: no respPort in cluster.json/),
  })
})

test('a node that failed is skipped for retryMs: no new connection per key', async () => {
  fakes[0]!.behaviour = { kind: 'drop' }
  const f = make({ retryMs: 60_000 })
  for (let i = 0; i < 20; i++) expect(text(await fetch(f, [`k${i}`], [1, 2]))).toEqual([`node2:v5:k${i}`])
  expect(fakes[0]!.accepted).toBe(1)
})

test('AUTH with the read token goes first on every connection to a node', async () => {
  const f = make({ readToken: 'tok-123' })
  await Promise.all(Array.from({ length: 30 }, (_, i) => fetch(f, [`k${i}`], [1])))
  const cmds = fakes[0]!.commands
  expect(cmds[0]).toEqual(['AUTH', 'tok-123'])
  expect(cmds.filter((c) => c[0] === 'AUTH').length).toBe(fakes[0]!.accepted)
  expect(cmds.filter((c) => c[0] === 'ROSTORE.GETS').length).toBe(30)
  // Pipelined: 30 concurrent forwards did not open 30 connections.
  expect(fakes[0]!.accepted).toBeLessThanOrEqual(2)
})
