import http from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * An HTTP proxy in front of a server (the S3 test server) that counts the body bytes it
 * passes for requests whose path matches `counted`, and can cut them: once `cutAfter`
 * bytes of counted bodies have passed, every counted answer is cut after its headers
 * (the connection reset), like a store that fails mid-transfer. Requests are forwarded
 * with their headers unchanged, so signatures made for the proxy's host stay valid.
 */
export class CountingProxy {
  /** Body bytes of counted answers passed to clients since the last reset. */
  bytes = 0
  /** Counted requests answered in full or cut. */
  requests = 0
  cuts = 0
  private cutAfter = Infinity

  private constructor(
    private readonly server: http.Server,
    readonly port: number,
    private readonly target: number,
    private readonly counted: RegExp,
  ) {}

  static async start(targetPort: number, counted: RegExp): Promise<CountingProxy> {
    const server = http.createServer()
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const proxy = new CountingProxy(server, (server.address() as AddressInfo).port, targetPort, counted)
    server.on('request', (req, res) => proxy.forward(req, res))
    return proxy
  }

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`
  }

  /** Cut every counted answer once `bytes` more have passed (Infinity: never). */
  cutAfterBytes(bytes: number): void {
    this.cutAfter = this.bytes + bytes
  }

  reset(): void {
    this.bytes = 0
    this.requests = 0
    this.cuts = 0
    this.cutAfter = Infinity
  }

  private forward(req: http.IncomingMessage, res: http.ServerResponse): void {
    const counted = this.counted.test(req.url ?? '')
    const upstream = http.request(
      { host: '127.0.0.1', port: this.target, method: req.method, path: req.url, headers: req.headers, agent: false },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers)
        if (!counted) {
          up.pipe(res)
          return
        }
        this.requests++
        up.on('data', (chunk: Buffer) => {
          const room = this.cutAfter - this.bytes
          if (room <= 0) {
            this.cuts++
            up.destroy()
            res.destroy()
            return
          }
          const part = chunk.length <= room ? chunk : chunk.subarray(0, room)
          this.bytes += part.length
          res.write(part)
          if (part.length < chunk.length) {
            this.cuts++
            up.destroy()
            res.destroy()
          }
        })
        up.on('end', () => res.end())
        up.on('error', () => res.destroy())
      },
    )
    upstream.on('error', () => res.destroy())
    req.pipe(upstream)
  }

  async close(): Promise<void> {
    this.server.closeAllConnections()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}
