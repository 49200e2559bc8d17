/** @module One admin request: its Hono context type, the only functions that write admin responses
 * (JSON, empty, failure), and the middleware that gives every request an `x-request-id`, drains a
 * body the reply did not need, logs the request once (never a body) and counts it in the HTTP
 * metrics. A failure body is exactly `{"error": <message>, "code": <Code>}`. */
import type { HttpBindings } from '@hono/node-server'
import type { Context, MiddlewareHandler } from 'hono'
import type { Mesh } from '../../protocol/actor.js'
import type { ErrorCode, Failure } from '../../protocol/errors.js'
import { newRequestId } from '../s3/router.js'
import { drainBody } from './body.js'
import { clientFields, isNodeFault } from '../request-log.js'
import { adminErrorFor, type AdminError } from './errors.js'

export interface AdminVariables {
  requestId: string
  /** The metrics operation (AdminLogin, AdminCreateUser...), set once a route matches. */
  operation: string
  /** The matched route's path pattern, for the log. */
  route: string
  /** The caller once its token is authorized. */
  userId: string | null
  /** Why the request failed, for the log only. */
  failure: { code: ErrorCode | string; detail: string } | null
}

export type AdminEnv = { Bindings: HttpBindings; Variables: AdminVariables }
export type AdminContext = Context<AdminEnv>

export const ADMIN_PREFIX = '/api/admin'

function headersOf(c: AdminContext, extra: Record<string, string>): Record<string, string> {
  return { 'x-request-id': c.get('requestId'), ...extra }
}

export function sendJson(c: AdminContext, status: number, value: unknown): Response {
  return jsonResponse(c, status, value, {})
}

function jsonResponse(
  c: AdminContext,
  status: number,
  value: unknown,
  extra: Record<string, string>,
): Response {
  const text = JSON.stringify(value)
  const headers = headersOf(c, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(text, 'utf8')),
    ...extra,
  })
  return new Response(text, { status, headers })
}

export function sendEmpty(c: AdminContext, status: 204): Response {
  return new Response(null, { status, headers: headersOf(c, {}) })
}

/** The answer to a failed Result. A 400 says what to correct (its detail comes from validation
 * and never holds a value the client sent); other statuses carry the mapping's fixed text. */
export function sendFailure(c: AdminContext, failure: Failure): Response {
  const mapped = adminErrorFor(failure.code)
  c.set('failure', { code: failure.code, detail: failure.detail })
  const message = mapped.status === 400 && failure.detail !== '' ? failure.detail : mapped.message
  const extra: Record<string, string> = {}
  if (mapped.status === 429) extra['retry-after'] = String(failure.retryAfterSecs ?? 1)
  if (mapped.status === 503) extra['retry-after'] = String(failure.retryAfterSecs ?? 1)
  return jsonResponse(c, mapped.status, { error: message, code: mapped.code }, extra)
}

export function sendCode(c: AdminContext, code: ErrorCode, detail: string): Response {
  return sendFailure(c, { ok: false, code, detail })
}

/** An answer decided by routing rather than by an ErrorCode (an unknown path). */
export function sendAdminError(c: AdminContext, error: AdminError): Response {
  c.set('failure', { code: error.code, detail: c.req.path })
  return jsonResponse(c, error.status, { error: error.message, code: error.code }, {})
}

function byteCount(header: string | null | undefined): number {
  const count = Number(header)
  return Number.isSafeInteger(count) && count >= 0 ? count : 0
}

/** Request id, drain, one log line and one metrics sample per admin request. */
export function exchangeMiddleware(mesh: Mesh): MiddlewareHandler<AdminEnv> {
  return async (c, next) => {
    const startedMs = mesh.now()
    const client = clientFields(c.env.incoming)
    c.set('requestId', newRequestId())
    c.set('operation', 'AdminNotFound')
    c.set('route', `${ADMIN_PREFIX}/*`)
    c.set('userId', null)
    c.set('failure', null)
    await next()
    drainBody(c.env.incoming)
    const ms = mesh.now() - startedMs
    const { status } = c.res
    const operation = c.get('operation')
    mesh.observeRequest({
      operation,
      method: c.req.method,
      status,
      seconds: ms / 1000,
      requestBytes: byteCount(c.req.header('content-length')),
      responseBytes: byteCount(c.res.headers.get('content-length')),
    })
    const fields = {
      requestId: c.get('requestId'),
      operation,
      method: c.req.method,
      route: c.get('route'),
      status,
      ms,
      user: c.get('userId'),
      ...c.get('failure'),
    }
    // Logged once the response is written, so that its bytes are counted.
    c.env.outgoing.once('close', () => {
      if (isNodeFault(status)) mesh.log.error({ ...fields, ...client() }, 'admin request failed')
      else mesh.log.info({ ...fields, ...client() }, 'admin request')
    })
  }
}
