import net from 'node:net'
import { connectUpstream } from './upstream'

export interface StallProxyOptions {
  /** Bytes of answer let through once a connection is armed, before it goes silent. */
  readonly stallAfterBytes: number
  /** How many connections may be armed; default all of them. */
  readonly stalls?: number
  /** Arm a connection only when it carries a request for a matching path. */
  readonly only?: RegExp
}

/**
 * TCP proxy in front of a server that can go silent: once a connection is armed it
 * forwards `stallAfterBytes` more bytes of answer and then nothing, keeping the socket
 * open, like a hung server or a black-holed link.
 */
export class StallProxy {
  private readonly sockets = new Set<net.Socket>()
  private stallsLeft: number
  connections = 0

  private constructor(
    private readonly server: net.Server,
    readonly port: number,
    private readonly targetPort: number,
    private readonly opts: StallProxyOptions,
  ) {
    this.stallsLeft = opts.stalls ?? Infinity
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/`
  }

  static async start(targetPort: number, opts: StallProxyOptions): Promise<StallProxy> {
    const server = net.createServer()
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(0, '127.0.0.1', resolve)
    })
    const proxy = new StallProxy(server, (server.address() as net.AddressInfo).port, targetPort, opts)
    server.on('connection', (client) => proxy.handle(client))
    return proxy
  }

  private handle(client: net.Socket): void {
    this.connections++
    const upstream = connectUpstream(client, this.targetPort, this.sockets)
    let armed = false
    let sent = 0
    client.on('data', (d: Buffer) => {
      const path = /^[A-Z]+ (\S+) HTTP\//.exec(d.toString('latin1'))?.[1]
      if (!armed && path !== undefined && this.stallsLeft > 0 && (this.opts.only === undefined || this.opts.only.test(path))) {
        armed = true
        this.stallsLeft--
      }
      upstream.write(d)
    })
    upstream.on('data', (d: Buffer) => {
      if (!armed) {
        client.write(d)
        return
      }
      const room = this.opts.stallAfterBytes - sent
      if (room > 0) client.write(room >= d.length ? d : d.subarray(0, room))
      sent += d.length
      // Past the limit: swallow everything, keep the socket open, send nothing.
    })
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}
