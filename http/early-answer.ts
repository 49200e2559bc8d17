/** @module An answer sent before its request's body was read whole (a PUT to a missing bucket is
 * refused before its body) closes the connection: the client must not send another request on
 * it. Node's server closes it as soon as the answer is written (`destroySoon`), and closing a
 * socket with bytes unread resets the connection; a reset that reaches the client while it still
 * sends makes its kernel drop what it has not read yet, the answer with it. So the close lingers,
 * as nginx's lingering close does: the answer goes with a FIN, the rest of the body is read and
 * dropped (Node's server drains an unread body once the answer is sent), and the socket closes
 * when the client ends its side, or LINGER_MS after the answer, by which time it has read it. */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'

/** How long a client may go on sending a body nobody reads after its answer. */
export const LINGER_MS = 2_000

/** Marks `outgoing` as the last answer of its connection, closed lingering. */
export function closeAfterAnswer(incoming: IncomingMessage, outgoing: ServerResponse): void {
  outgoing.setHeader('connection', 'close')
  const socket = incoming.socket as (Socket & { destroySoon?: () => void }) | null
  if (typeof socket?.destroySoon !== 'function') return
  // Node's server calls this once the last answer is written; the socket is this request's own.
  socket.destroySoon = () => {
    socket.end()
    const timer = setTimeout(() => socket.destroy(), LINGER_MS)
    const done = (): void => {
      clearTimeout(timer)
      socket.destroy()
    }
    socket.once('end', done)
    socket.once('close', () => clearTimeout(timer))
    // The body flows (and is dropped) even when the request was piped somewhere that stopped.
    incoming.resume()
  }
}
