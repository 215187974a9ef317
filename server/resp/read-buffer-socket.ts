import { Socket, type Server, type SocketConstructorOpts } from 'node:net'

/** Size of a listener's read buffer: what one read(2) of one connection may return. */
export const READ_BUFFER_BYTES = 64 << 10

/** The parts of an accepted socket this moves (not public API, unchanged since Node 0.x). */
interface AcceptedParts {
  _handle: { useUserBuffer?: unknown } | null
  _server: Server | null
  server: Server | null
}

/**
 * Gives an accepted connection a read buffer of its listener's: Node's `onread` option
 * (every read lands in one reused buffer and goes to a callback, with no Buffer allocated
 * per read, no 'data' event and no stream bookkeeping per read) exists for sockets a
 * program creates, not for those a net.Server accepts. So the accepted socket's handle
 * moves to a new Socket created with `onread`, and the listener's connection count moves
 * with it. It lowers the server CPU per RESP GET (RESULTS section 3b); the shape check
 * below is its self-check, and a socket that fails it reads as a stream.
 *
 * `accepted` must come from a listener created with `pauseOnConnect` (nothing read yet).
 * `onBytes` gets views of `buffer`, valid only until it returns: the buffer is shared by
 * every connection of the listener. Returns undefined, leaving `accepted` as it was, where
 * the socket does not have the expected shape (another runtime, a TLS socket); the caller
 * then reads it as a stream.
 */
export function withReadBuffer(accepted: Socket, buffer: Buffer, onBytes: (bytes: Buffer) => void): Socket | undefined {
  const parts = accepted as unknown as AcceptedParts
  const handle = parts._handle
  const server = parts._server
  if (handle === null || typeof handle.useUserBuffer !== 'function' || server === null || accepted.destroyed) return undefined
  parts._handle = null
  parts._server = parts.server = null
  const opts = {
    handle,
    onread: {
      buffer,
      callback: (n: number, buf: Uint8Array): boolean => {
        onBytes((buf as Buffer).subarray(0, n))
        return true
      },
    },
  } as SocketConstructorOpts
  const socket = new Socket(opts)
  const moved = socket as unknown as AcceptedParts
  moved._server = moved.server = server
  // The shell left behind has no handle and no listener: destroying it releases nothing.
  accepted.destroy()
  socket.resume()
  return socket
}
