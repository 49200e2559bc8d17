/** @module The fields every request's log line carries besides its own (S3 and admin alike): the
 * client's address (the TCP peer, or the one a gateway vouched for: client-address.ts; a proxy's
 * header is not trusted), its user agent, and the bytes
 * the request moved on its connection: `bytesIn` read while it was served (its body: the headers
 * were read before it began) and `bytesOut` written (the response, headers included). They are
 * differences of the connection's counters, so a keep-alive connection counts each request
 * apart. */
import type { IncomingMessage } from 'node:http'
import { clientAddress } from './client-address.js'

export interface ClientFields {
  client: string | undefined
  userAgent: string | undefined
  bytesIn: number
  bytesOut: number
}

/** Call when the request begins; the function it returns gives the fields when it ends. */
export function clientFields(incoming: IncomingMessage): () => ClientFields {
  const socket = incoming.socket
  const readBefore = socket.bytesRead
  const writtenBefore = socket.bytesWritten
  return () => ({
    client: clientAddress(incoming, socket),
    userAgent: incoming.headers['user-agent'],
    bytesIn: socket.bytesRead - readBefore,
    bytesOut: socket.bytesWritten - writtenBefore,
  })
}

/** Whether a response's status is a fault of the node, which its log line reports at level error:
 * a 5xx, but not 501, a client's request for what the node does not implement (refused, not
 * failed: at level info, as any refused request). */
export function isNodeFault(status: number): boolean {
  return status >= 500 && status !== 501
}
