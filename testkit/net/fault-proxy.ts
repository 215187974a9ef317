import net from 'node:net'
import { ownerOf } from './socket-owner'

export type ProxyMode = 'pass' | 'cut' | 'stall'

/** Whose connections a fault applies to: everyone's, the pusher's only, or everyone's but the pusher's (the nodes' and the readers'). */
export type LinkSide = 'all' | 'pusher' | 'others'

interface Link {
  readonly client: net.Socket
  readonly upstream: net.Socket
  lost: boolean
  readonly fromPusher: boolean
}

/**
 * A TCP proxy in front of a node (it listens on the node's address in cluster.json) whose
 * link can be cut (open connections reset, new ones refused) or stalled (bytes swallowed
 * both ways, connections kept open, like a black-holed link) for a while. A connection that
 * lost bytes to a stall is reset when the link comes back: its framing is broken. With
 * `pusherPid` set, each connection is told apart by the process that opened it
 * (socket-owner.ts), so a fault can hit the pusher's links only, or everyone else's.
 */
export class FaultProxy {
  private readonly links = new Set<Link>()
  private mode: ProxyMode = 'pass'
  private side: LinkSide = 'all'
  /** The process whose connections are "the pusher's" (undefined: nobody's). */
  pusherPid: number | undefined

  private constructor(
    private readonly server: net.Server,
    private readonly targetPort: number,
    /** The port the proxy listens on. */
    readonly port: number,
  ) {}

  static async start(port: number, targetPort: number): Promise<FaultProxy> {
    const server = net.createServer({ pauseOnConnect: true })
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, '127.0.0.1', resolve)
    })
    const proxy = new FaultProxy(server, targetPort, port)
    server.on('connection', (client) => void proxy.handle(client))
    return proxy
  }

  set(mode: ProxyMode, side: LinkSide = 'all'): void {
    this.mode = mode
    this.side = side
    for (const c of [...this.links]) {
      if ((mode === 'cut' && this.hits(c.fromPusher)) || (mode === 'pass' && c.lost)) {
        c.client.destroy()
        c.upstream.destroy()
      }
    }
  }

  private hits(fromPusher: boolean): boolean {
    return this.mode !== 'pass' && (this.side === 'all' || (this.side === 'pusher') === fromPusher)
  }

  private async handle(client: net.Socket): Promise<void> {
    client.on('error', () => undefined)
    const pid = this.pusherPid
    const fromPusher = pid !== undefined && client.remotePort !== undefined && (await ownerOf(client.remotePort, this.port, [pid])) === pid
    if (this.mode === 'cut' && this.hits(fromPusher)) return void client.destroy()
    const upstream = net.connect(this.targetPort, '127.0.0.1')
    const c: Link = { client, upstream, lost: false, fromPusher }
    this.links.add(c)
    for (const s of [client, upstream]) {
      s.on('error', () => undefined)
      s.on('close', () => {
        this.links.delete(c)
        client.destroy()
        upstream.destroy()
      })
    }
    const pipe = (from: net.Socket, to: net.Socket): void => {
      from.on('data', (d: Buffer) => {
        if (!this.hits(c.fromPusher)) to.write(d)
        else c.lost = true
      })
    }
    pipe(client, upstream)
    pipe(upstream, client)
    client.resume()
  }

  async close(): Promise<void> {
    this.set('cut')
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}
