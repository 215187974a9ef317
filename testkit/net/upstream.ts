import * as net from 'node:net'

/**
 * Opens the proxied connection to 127.0.0.1:`port` for `client`: both sockets are tracked in
 * `sockets` until they close (so a proxy can cut every link at once), errors are the
 * test's to observe through the other side, and either side closing closes the other.
 */
export function connectUpstream(client: net.Socket, port: number, sockets: Set<net.Socket>): net.Socket {
  const upstream = net.connect(port, '127.0.0.1')
  for (const s of [client, upstream]) {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
    s.on('error', () => undefined)
  }
  client.on('close', () => upstream.destroy())
  upstream.on('close', () => client.destroy())
  return upstream
}
