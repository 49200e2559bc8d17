/** @module The chaos route, present only with SVC_CHAOS=1: `POST /admin/chaos/kill/{actor}`
 * terminates that actor's thread abruptly, so tests can check that the node heals. With
 * `?down_ms=N` (0 to DOWN_MS_MAX) the supervisor restarts it no sooner than N ms later, so that a
 * test (or an operator rehearsing a failure) sees the actor down for a known time, however fast
 * or busy the machine. Only a SuperUser may call it (SigV4 with the bootstrap keys). Answers JSON
 * `{ killed }`. */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Mesh } from '../protocol/actor.js'
import { authenticate } from './s3/authenticate.js'
import { send, sendError } from './s3/exchange.js'
import { newExchange } from './s3/router.js'
import type { AuthCaches } from './s3/authenticate.js'

/** The longest hold a kill may ask for: longer than any test needs, short of the node's drain. */
export const DOWN_MS_MAX = 60_000

/** `down_ms` of a kill's query: absent is 0; null when it is not an integer in range. */
export function parseDownMs(url: string | undefined): number | null {
  const value = new URLSearchParams((url ?? '').split('?')[1] ?? '').get('down_ms')
  if (value === null) return 0
  const ms = Number(value)
  return /^\d{1,5}$/.test(value) && ms <= DOWN_MS_MAX ? ms : null
}

function sendJson(ex: ReturnType<typeof newExchange>, status: number, body: object): void {
  send(ex, status, { 'content-type': 'application/json' }, JSON.stringify(body))
}

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
  const downMs = parseDownMs(incoming.url)
  if (downMs === null) {
    const error = `down_ms must be an integer from 0 to ${DOWN_MS_MAX}`
    return sendJson(ex, 400, { error, code: 'InvalidArgument' })
  }
  if (!(await mesh.kill(actor, downMs))) {
    return sendJson(ex, 404, { error: `no actor named ${actor}`, code: 'NotFound' })
  }
  sendJson(ex, 200, { killed: actor })
}
