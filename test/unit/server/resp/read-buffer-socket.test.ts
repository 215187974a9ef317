import { connect, createServer, Socket, type Server } from 'node:net'
import { withReadBuffer } from '../../../../server/resp/read-buffer-socket'
import { waitUntil } from '../../../../testkit/cluster/reliability-kit'

/**
 * The accepted socket's handle moves to a Socket that reads into a shared buffer: bytes
 * arrive, writes and pause/resume work, the listener still counts the connection (so
 * close() waits for it), and a socket of another shape is left alone.
 */
function listen(server: Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)))
}

function connections(server: Server): Promise<number> {
  return new Promise((resolve, reject) => server.getConnections((err, n) => (err ? reject(err) : resolve(n))))
}

test('a socket without a handle is not moved', () => {
  const s = new Socket()
  expect(withReadBuffer(s, Buffer.alloc(16), () => undefined)).toBeUndefined()
  expect(s.destroyed).toBe(false)
  s.destroy()
})

test('reads land in the shared buffer; echo, back pressure, and the listener closes once the client leaves', async () => {
  const shared = Buffer.alloc(1024)
  const seen: Buffer[] = []
  let resolveAccepted: (s: Socket) => void = () => undefined
  const accepted = new Promise<Socket>((resolve) => (resolveAccepted = resolve))
  const server = createServer({ pauseOnConnect: true }, (s) => {
    const moved = withReadBuffer(s, shared, (bytes) => {
      // A view of the shared buffer, valid during the call only.
      expect(bytes.buffer).toBe(shared.buffer)
      seen.push(Buffer.from(bytes))
      moved?.write(Buffer.from(bytes).reverse())
    })
    if (moved) resolveAccepted(moved)
  })
  const port = await listen(server)
  const client = connect({ host: '127.0.0.1', port })
  const echoed: Buffer[] = []
  client.on('data', (c: Buffer) => echoed.push(c))
  const socket = await accepted
  expect(socket).toBeInstanceOf(Socket)
  expect(await connections(server)).toBe(1)
  client.write('abc')
  expect(await waitUntil(() => Buffer.concat(echoed).toString() === 'cba')).toBe(true)
  // Paused, nothing is read; resumed, what waited arrives.
  socket.pause()
  client.write('xyz')
  await new Promise((r) => setTimeout(r, 50))
  expect(Buffer.concat(seen).toString()).toBe('abc')
  socket.resume()
  expect(await waitUntil(() => Buffer.concat(seen).toString() === 'abcxyz')).toBe(true)
  const closed = new Promise<void>((resolve) => server.close(() => resolve()))
  const socketClosed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
  client.end()
  await socketClosed
  await closed
  expect(await connections(server)).toBe(0)
})
