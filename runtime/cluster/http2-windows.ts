/** @module HTTP/2 flow-control windows of the transport. HTTP/2 starts every stream and connection
 * with a 64 KiB window, and gRPC keeps it: with 16 bodies of 1 MiB in flight to one peer they
 * shared 64 KiB, so the sender stopped after every few frames until the receiver's WINDOW_UPDATE
 * came back, and each node spent more CPU per PUT than with the windows below.
 * Memory stays bounded: a receiver buffers at most STREAM_WINDOW_BYTES per call (the body
 * receiver pauses its call while its sink has no credit) and CONNECTION_WINDOW_BYTES per peer
 * connection. A caller's windows (for the answers it reads) are a gRPC channel option; a
 * server's are
 * not, so they are set on each HTTP/2 session the server accepts. */
import type { Http2Server, Http2Session } from 'node:http2'
import type { Server } from '@grpc/grpc-js'

export const STREAM_WINDOW_BYTES = 4 * 1024 * 1024
export const CONNECTION_WINDOW_BYTES = 16 * 1024 * 1024

/** The channel option of a caller's windows: gRPC gives its one value to the stream and the
 * connection windows, so a caller reading answers buffers at most STREAM_WINDOW_BYTES per peer. */
export const CALLER_WINDOW_OPTION = { 'grpc-node.flow_control_window': STREAM_WINDOW_BYTES }

/** Opens the windows of every session `server` accepts from now on; the server must be bound.
 * gRPC keeps its HTTP/2 servers in a private map: false when it has none (a gRPC release that
 * changed it), which leaves the default windows (slower, not wrong) and fails the transport's
 * test. */
export function openServerWindows(server: Server): boolean {
  const servers = (server as unknown as { http2Servers?: unknown }).http2Servers
  if (!(servers instanceof Map) || servers.size === 0) return false
  for (const http2Server of servers.keys() as IterableIterator<Http2Server>) {
    http2Server.on('session', openSessionWindows)
  }
  return true
}

function openSessionWindows(session: Http2Session): void {
  session.settings({ initialWindowSize: STREAM_WINDOW_BYTES })
  session.setLocalWindowSize(CONNECTION_WINDOW_BYTES)
}
