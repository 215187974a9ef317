import { createServer } from 'node:net'

/**
 * A port free right now on `host`: bind port 0, read the kernel's pick, let it go.
 * Another process could take it before the caller binds; on loopback that is rare.
 */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.unref()
    srv.once('error', reject)
    srv.listen({ host, port: 0 }, () => {
      const addr = srv.address()
      const port = typeof addr === 'object' && addr ? addr.port : 0
      srv.close(() => resolve(port))
    })
  })
}
