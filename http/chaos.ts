/** @module The chaos route, present only with SVC_CHAOS=1: `POST /admin/chaos/kill/{actor}`
 * terminates that actor's thread abruptly, so tests can check that the node heals. Only a SuperUser
 * may call it (SigV4 with the bootstrap keys). Answers JSON `{ killed }`. */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Mesh } from '../protocol/actor.js'
import { authenticate } from './s3/authenticate.js'
import { send, sendError } from './s3/exchange.js'
import { newExchange } from './s3/router.js'
import type { AuthCaches } from './s3/authenticate.js'

export async function killActor(
  incoming: IncomingMessage,
  outgoing: ServerResponse,
  mesh: Mesh,
  caches: AuthCaches,
  actor: string,
): Promise<void> {
  const ex = newExchange(incoming, outgoing, mesh)
  const auth = await authenticate(ex, caches)
  if (!auth.ok) return sendError(ex, auth.code, auth.detail)
  if (auth.value.principal.role !== 'SuperUser')
    return sendError(ex, 'access_denied', 'Access Denied')
  const killed = await mesh.kill(actor)
  if (!killed) {
    return send(
      ex,
      404,
      { 'content-type': 'application/json' },
      JSON.stringify({
        error: `no actor named ${actor}`,
        code: 'NotFound',
      }),
    )
  }
  send(ex, 200, { 'content-type': 'application/json' }, JSON.stringify({ killed: actor }))
}
