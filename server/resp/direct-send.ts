import type { Socket } from 'node:net'
import { nativeFunctions } from '../../common/native'

/** The parts of a socket's handle this reads (not public API; present on TCP handles since Node 0.x). */
interface SendableHandle {
  readonly fd?: unknown
  readonly writeQueueSize?: unknown
}

/** Sends one batch of replies on the socket, in order after everything sent before. */
export type ReplySend = (bytes: Buffer) => void

/**
 * A reply path that skips Node's stream machinery while nothing waits to be sent: one
 * send(2) from the addon (native/io/socket-send.c) instead of socket.write, which allocates a
 * write request, runs the Writable's bookkeeping and schedules its callbacks for every batch
 * of replies. It lowers the server CPU per RESP GET (RESULTS section 3b); the handle's
 * shape is checked on every connection (its self-check), and a socket that fails the check
 * sends through socket.write.
 *
 * Order and back pressure stay Node's: the direct send is tried only when the socket has no
 * bytes queued in the stream or in libuv, and what the kernel does not take (a client that
 * reads slowly) goes through socket.write, so `writableLength`, 'drain' and the send
 * timeout see it as before. Errors (a peer that reset) go through socket.write as well, which
 * meets the same error and closes the socket the usual way.
 *
 * Returns undefined, for plain socket.write, where the addon is not loaded or the socket has
 * no descriptor of its own (TLS, other runtimes). The handle is checked on every send: a
 * descriptor is reused by the next connection once its socket closes.
 */
export function directSend(socket: Socket): ReplySend | undefined {
  const native = nativeFunctions()
  const parts = socket as unknown as { _handle: SendableHandle | null }
  const handle = parts._handle
  if (
    native === undefined ||
    handle === null ||
    typeof handle.fd !== 'number' ||
    handle.fd < 0 ||
    typeof handle.writeQueueSize !== 'number'
  ) {
    return undefined
  }
  const fd = handle.fd
  return (bytes) => {
    if (parts._handle === handle && handle.writeQueueSize === 0 && socket.writableLength === 0 && socket.writable) {
      const sent = native.sendNow(fd, bytes)
      if (sent === bytes.length) return
      if (sent > 0) {
        socket.write(bytes.subarray(sent))
        return
      }
    }
    socket.write(bytes)
  }
}
