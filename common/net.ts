import { createServer } from 'node:net'

/** Ports this process has already handed out: the kernel may offer a just-closed port again. */
const handedOut = new Set<number>()

/**
 * A port free right now on `host`: bind port 0, read the kernel's pick, let it go.
 * Another process could take it before the caller binds; on loopback that is rare. Within
 * this process a port is never handed out twice, so several picks in a row (a cluster file's
 * nodes) are distinct even when the kernel offers a just-released port again.
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    const port = await kernelPick(host)
    if (!handedOut.has(port) || attempt >= 100) {
      handedOut.add(port)
      return port
    }
  }
}

function kernelPick(host: string): Promise<number> {
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
