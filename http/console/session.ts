/** @module Console sessions. Signing in turns a username and password into the admin API's token
 * (iam.login), kept in an HttpOnly, SameSite=Strict cookie (Secure under TLS) scoped to /console.
 * Every console request turns the cookie back into a principal with iam.authorize, so a user
 * deactivated or deleted, or a token expired, loses the console at once, as it loses the admin API.
 * Against cross-site requests, besides SameSite: every request that changes something must carry
 * the session's CSRF token (a digest of the session token, which another site cannot read) in
 * X-CSRF-Token, and a sign-in form must come from the console's own origin. */
import { createHash, timingSafeEqual } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'
import { parse } from 'hono/utils/cookie'
import type { Mesh } from '../../protocol/actor.js'
import { isRetryable, type Result } from '../../protocol/errors.js'
import type { LoginGrant, Principal } from '../../protocol/messages.js'
import { CALL_TIMEOUT_MS } from '../../protocol/timing.js'

export const SESSION_COOKIE = 'svc_console'
export const CSRF_HEADER = 'x-csrf-token'
/** Methods that change nothing, which need no CSRF token. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

export interface Session {
  /** The admin API's bearer token the cookie carries. */
  token: string
  principal: Principal
  csrf: string
}

/** The CSRF token of a session: only a page of the console, which the server wrote it into, knows
 * it. */
export function csrfOf(token: string): string {
  return createHash('sha256').update('console csrf\0').update(token).digest('base64url')
}

export function sessionToken(cookieHeader: string | undefined): string | null {
  if (cookieHeader === undefined) return null
  const token = parse(cookieHeader, SESSION_COOKIE)[SESSION_COOKIE]
  return token === undefined || token === '' ? null : token
}

/** What a request's cookie is: a session; 'none' when there is no cookie or iam refuses its
 * token; 'unavailable' when iam cannot say just now (restarting, say), which must not sign the
 * user out. */
export type SessionLook = Session | 'none' | 'unavailable'

export async function readSession(
  mesh: Mesh,
  headers: IncomingHttpHeaders,
  requestId: string,
): Promise<SessionLook> {
  const token = sessionToken(headers.cookie)
  if (token === null) return 'none'
  const principal = await mesh.call('iam', {
    kind: 'iam.authorize',
    token,
    requestId,
    deadlineMs: mesh.now() + CALL_TIMEOUT_MS,
  })
  if (principal.ok) return { token, principal: principal.value, csrf: csrfOf(token) }
  return isRetryable(principal.code) ? 'unavailable' : 'none'
}

/** Whether a request may act for its session: a safe method, or the session's CSRF token. */
export function passesCsrf(
  method: string,
  headers: IncomingHttpHeaders,
  session: Session,
): boolean {
  if (SAFE_METHODS.has(method)) return true
  const sent = headers[CSRF_HEADER]
  if (typeof sent !== 'string') return false
  const expected = Buffer.from(session.csrf)
  const given = Buffer.from(sent)
  return given.length === expected.length && timingSafeEqual(given, expected)
}

/** Whether a form came from a page of this host: the browser's Origin (or, without it, the
 * Referer) names the host the request was sent to. A request with neither came from no page. */
export function fromOwnOrigin(headers: IncomingHttpHeaders): boolean {
  const source = headers.origin ?? headers.referer
  if (source === undefined || source === 'null') return false
  try {
    return new URL(source).host === headers.host
  } catch {
    return false
  }
}

export function signIn(
  mesh: Mesh,
  username: string,
  password: string,
  clientAddress: string,
  requestId: string,
): Promise<Result<LoginGrant>> {
  return mesh.call('iam', {
    kind: 'iam.login',
    username,
    password,
    clientAddress,
    requestId,
    deadlineMs: mesh.now() + CALL_TIMEOUT_MS,
  })
}

/** The Set-Cookie value of a session (maxAgeSeconds 0 ends it). */
export function sessionCookie(token: string, maxAgeSeconds: number, secure: boolean): string {
  const parts = [
    `${SESSION_COOKIE}=${token}`,
    'Path=/console',
    'HttpOnly',
    'SameSite=Strict',
    `Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}`,
  ]
  if (secure) parts.push('Secure')
  return parts.join('; ')
}
