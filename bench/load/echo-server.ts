/**
 * A process that has nothing to do with rostore: an HTTP server on 127.0.0.1 that answers
 * every POST with its small JSON body echoed back. The reads-during-swaps measurement pings
 * it from the bench process, at the pace of the paced swaps, to show what one HTTP exchange
 * between two other processes costs the read probe on this machine (swap-reads.ts).
 *
 * Run with fork(); it sends its port on the IPC channel and exits when the parent goes away.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'

/** Bodies larger than this are refused: the pinger sends a few bytes. */
const MAX_BODY_BYTES = 4096

function answer(req: IncomingMessage, res: ServerResponse): void {
  const chunks: Buffer[] = []
  let size = 0
  req.on('data', (c: Buffer) => {
    size += c.length
    if (size > MAX_BODY_BYTES) req.destroy()
    else chunks.push(c)
  })
  req.on('end', () => {
    let echo: unknown
    try {
      echo = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}')
    } catch {
      res.writeHead(400).end()
      return
    }
    const body = JSON.stringify({ ok: true, echo, at: Date.now() })
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body)
  })
}

function main(): void {
  const server = createServer(answer)
  server.listen(0, '127.0.0.1', () => {
    const address = server.address()
    if (address === null || typeof address === 'string') throw new Error('echo server: no TCP address')
    process.send?.({ port: address.port })
  })
  process.on('disconnect', () => process.exit(0))
}

main()
