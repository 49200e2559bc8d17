/** @module HTTP/1.1 pipelining: node:http emits a request as soon as it is parsed, also while the
 * response to the one before it on the same connection is still being made, so a GET sent right
 * behind a PUT of the same key could run before the PUT was stored. This wrapper starts a
 * connection's next request only once the response before it has closed (sent, or the client
 * gone): a client that pipelines sees each request done before the next starts, as with S3.
 * Responses already leave in order (node:http queues them). Bounded: at most
 * PIPELINED_WAITING_MAX requests wait per connection, and a connection that sends more is cut. How
 * long one waits is bounded by the request before it (its own deadlines and stream timeouts). */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'

type Listener = (incoming: IncomingMessage, outgoing: ServerResponse) => void

/** Far more than clients pipeline (those that do send a few requests ahead). */
export const PIPELINED_WAITING_MAX = 32

export function inOrder(listener: Listener): Listener {
  /** Per connection with a request in progress: the requests waiting behind it, in order. */
  const waiting = new WeakMap<Socket, Array<() => void>>()
  const next = (socket: Socket): void => {
    const queue = waiting.get(socket)
    const start = queue?.shift()
    if (start === undefined) waiting.delete(socket)
    else start()
  }
  return (incoming, outgoing) => {
    const socket = incoming.socket
    const start = (): void => {
      // A connection cut while this request waited: its response is closed already, and the
      // requests behind it are not served either.
      if (socket.destroyed) return next(socket)
      outgoing.once('close', () => next(socket))
      listener(incoming, outgoing)
    }
    const queue = waiting.get(socket)
    if (queue === undefined) {
      waiting.set(socket, [])
      start()
    } else if (queue.length >= PIPELINED_WAITING_MAX) {
      socket.destroy()
    } else {
      queue.push(start)
    }
  }
}
