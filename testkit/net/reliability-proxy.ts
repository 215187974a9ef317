import net from 'node:net'
import { connectUpstream } from './upstream'

/**
 * A TCP proxy in front of a node that can lose answers: a request whose request line
 * matches an armed pattern is forwarded whole, so the node carries it out, but its answer
 * never reaches the client, whose connection is cut instead (a network partition or a
 * client timeout right after the node acted). Everything else passes through unchanged.
 */
export class AnswerDroppingProxy {
  private readonly sockets = new Set<net.Socket>()
  private armed: { pattern: RegExp; left: number } | undefined
  /** Requests whose answers were dropped. */
  dropped = 0

  private constructor(
    private readonly server: net.Server,
    readonly port: number,
    private readonly targetPort: number,
  ) {}

  static async start(port: number, targetPort: number): Promise<AnswerDroppingProxy> {
    const server = net.createServer()
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, '127.0.0.1', resolve)
    })
    const proxy = new AnswerDroppingProxy(server, (server.address() as net.AddressInfo).port, targetPort)
    server.on('connection', (client) => proxy.handle(client))
    return proxy
  }

  /** Drop the answers of the next `count` requests whose request line matches `pattern`. */
  dropAnswers(pattern: RegExp, count = 1): void {
    this.armed = { pattern, left: count }
  }

  private handle(client: net.Socket): void {
    const upstream = connectUpstream(client, this.targetPort, this.sockets)
    let dropping = false
    client.on('data', (d: Buffer) => {
      const line = /^[A-Z]+ \S+ HTTP\/1\.[01]/.exec(d.toString('latin1'))?.[0]
      if (line !== undefined && this.armed && this.armed.left > 0 && this.armed.pattern.test(line)) {
        this.armed.left--
        dropping = true
        this.dropped++
      }
      upstream.write(d)
    })
    upstream.on('data', (d: Buffer) => {
      // The node has answered, so it has done the work: the client never learns it.
      if (dropping) client.destroy()
      else client.write(d)
    })
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}
