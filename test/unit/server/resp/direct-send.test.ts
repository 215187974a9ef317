import { connect, createServer, Socket, type Server } from 'node:net'
import { nativeFunctions } from '../../../../common/native'
import { directSend } from '../../../../server/resp/direct-send'
import { waitUntil } from '../../../../testkit/cluster/reliability-kit'

/**
 * Replies sent past the stream machinery: every byte arrives once and in order, also when
 * the client stops reading (what the kernel does not take goes through socket.write, and
 * back pressure shows in writableLength); a peer that resets or a socket that closed never
 * gets a send on its (possibly reused) descriptor. Without the addon there is no direct
 * path and the caller writes through the socket.
 */
interface Pair {
  server: Server
  client: Socket
  accepted: Socket
}

const open: Pair[] = []
afterEach(async () => {
  await Promise.all(open.splice(0).map(close))
})

/** A connected client and its accepted socket; closed after each test, whatever happened. */
async function pair(): Promise<Pair> {
  let resolveAccepted: (s: Socket) => void = () => undefined
  const accepted = new Promise<Socket>((resolve) => (resolveAccepted = resolve))
  const server = createServer((s) => resolveAccepted(s))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  const client = connect({ host: '127.0.0.1', port: (server.address() as { port: number }).port })
  const p = { server, client, accepted: await accepted }
  open.push(p)
  return p
}

async function close(p: Pair): Promise<void> {
  p.client.destroy()
  p.accepted.destroy()
  if (p.server.listening) await new Promise<void>((resolve) => p.server.close(() => resolve()))
}

function descriptor(s: Socket | Server): number {
  return (s as unknown as { _handle: { fd: number } | null })._handle?.fd ?? -1
}

test('a socket without a descriptor gets no direct path', () => {
  const s = new Socket()
  expect(directSend(s)).toBeUndefined()
  s.destroy()
})

const withAddon = nativeFunctions() !== undefined

test('a connected TCP socket gets the direct path exactly when the addon is loaded', async () => {
  const p = await pair()
  expect(directSend(p.accepted) !== undefined).toBe(withAddon)
})

;(withAddon ? describe : describe.skip)('with the addon', () => {
  test('batches far larger than the socket buffers arrive whole and in order while the client reads late', async () => {
    const p = await pair()
    const send = directSend(p.accepted)
    expect(send).toBeDefined()
    p.client.pause()
    const batches = Array.from({ length: 64 }, (_, i) => {
      const b = Buffer.alloc(200_000 + i * 996)
      for (let j = 0; j < b.length; j += 4) b.writeUInt32BE(((i << 24) | (j >>> 2)) >>> 0, j)
      return b
    })
    let queuedAtSomePoint = false
    for (const b of batches.slice(0, 40)) {
      send?.(b)
      if (p.accepted.writableLength > 0) queuedAtSomePoint = true
    }
    // The client read nothing: most of the ~8.8 MB waits in the stream, as socket.write leaves it.
    expect(queuedAtSomePoint).toBe(true)
    const received: Buffer[] = []
    let bytes = 0
    p.client.on('data', (c: Buffer) => {
      received.push(c)
      bytes += c.length
    })
    p.client.resume()
    // The rest while the client reads: the kernel has room again before the stream's queue is
    // out, and a send that skipped the queue would overtake it.
    for (const b of batches.slice(40)) {
      await new Promise((r) => setImmediate(r))
      send?.(b)
    }
    const expected = Buffer.concat(batches)
    expect(await waitUntil(() => bytes >= expected.length, 10_000)).toBe(true)
    expect(Buffer.concat(received).equals(expected)).toBe(true)
    expect(await waitUntil(() => p.accepted.writableLength === 0, 10_000)).toBe(true)
    // Drained, small sends go straight out again.
    send?.(Buffer.from('+OK\r\n'))
    expect(p.accepted.writableLength).toBe(0)
    expect(await waitUntil(() => bytes === expected.length + 5, 10_000)).toBe(true)
  })

  test('a peer that reset: the send does not throw and the socket closes with its error', async () => {
    const p = await pair()
    const send = directSend(p.accepted)
    const errors: string[] = []
    p.accepted.on('error', (err: NodeJS.ErrnoException) => errors.push(err.code ?? ''))
    const closed = new Promise<void>((resolve) => p.accepted.once('close', () => resolve()))
    p.client.resetAndDestroy()
    // Sends until one meets the reset (the first may still be taken by the kernel), a bounded number.
    for (let i = 0; i < 1000 && !p.accepted.destroyed; i++) {
      expect(() => send?.(Buffer.alloc(64 << 10, 1))).not.toThrow()
      await new Promise((r) => setImmediate(r))
    }
    await closed
    expect(errors.length).toBeGreaterThan(0)
  })

  test('a socket that closed never sends on its descriptor, which the next connection holds', async () => {
    const first = await pair()
    const send = directSend(first.accepted)
    const fd = descriptor(first.accepted)
    first.accepted.on('error', () => undefined)
    const closed = new Promise<void>((resolve) => first.accepted.once('close', () => resolve()))
    first.accepted.destroy()
    await closed
    // A new client of the same listener: its socket gets the lowest free descriptor, the one just closed.
    const acceptedNext = new Promise<Socket>((resolve) => first.server.once('connection', resolve))
    const client = connect({ host: '127.0.0.1', port: (first.server.address() as { port: number }).port })
    const second = { server: first.server, client, accepted: await acceptedNext }
    open.push(second)
    expect([descriptor(second.client), descriptor(second.accepted)]).toContain(fd)
    const toClient: Buffer[] = []
    const toServer: Buffer[] = []
    second.client.on('data', (c: Buffer) => toClient.push(c))
    second.accepted.on('data', (c: Buffer) => toServer.push(c))
    send?.(Buffer.from('not for you'))
    second.accepted.write('mine')
    second.client.write('ours')
    // Bytes sent on either socket of this connection before 'mine' and 'ours' would arrive before them.
    expect(await waitUntil(() => Buffer.concat(toClient).length >= 4 && Buffer.concat(toServer).length >= 4, 10_000)).toBe(true)
    expect(Buffer.concat(toClient).toString()).toBe('mine')
    expect(Buffer.concat(toServer).toString()).toBe('ours')
  })
})
