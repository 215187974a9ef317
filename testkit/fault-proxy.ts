import net from 'node:net'

export type ProxyMode = 'pass' | 'cut' | 'stall'

/**
 * A TCP proxy in front of a node (it listens on the node's address in cluster.json) whose
 * link can be cut (open connections reset, new ones refused) or stalled (bytes swallowed
 * both ways, connections kept open, like a black-holed link) for a while. A connection that
 * lost bytes to a stall is reset when the link comes back: its HTTP framing is broken.
 */
export class FaultProxy {
  private readonly sockets = new Set<{ client: net.Socket; upstream: net.Socket; lost: boolean }>()
  private mode: ProxyMode = 'pass'

  private constructor(
    private readonly server: net.Server,
    private readonly targetPort: number,
  ) {}

  static async start(port: number, targetPort: number): Promise<FaultProxy> {
    const server = net.createServer()
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, '127.0.0.1', resolve)
    })
    const proxy = new FaultProxy(server, targetPort)
    server.on('connection', (client) => proxy.handle(client))
    return proxy
  }

  set(mode: ProxyMode): void {
    this.mode = mode
    for (const c of [...this.sockets]) {
      if (mode === 'cut' || (mode === 'pass' && c.lost)) {
        c.client.destroy()
        c.upstream.destroy()
      }
    }
  }

  private handle(client: net.Socket): void {
    if (this.mode === 'cut') return void client.destroy()
    const upstream = net.connect(this.targetPort, '127.0.0.1')
    const c = { client, upstream, lost: false }
    this.sockets.add(c)
    for (const s of [client, upstream]) {
      s.on('error', () => undefined)
      s.on('close', () => {
        this.sockets.delete(c)
        client.destroy()
        upstream.destroy()
      })
    }
    const pipe = (from: net.Socket, to: net.Socket): void => {
      from.on('data', (d: Buffer) => {
        if (this.mode === 'pass') to.write(d)
        else c.lost = true
      })
    }
    pipe(client, upstream)
    pipe(upstream, client)
  }

  async close(): Promise<void> {
    this.set('cut')
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}
