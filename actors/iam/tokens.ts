/** @module Admin bearer tokens: HS256 JWTs (Hono's jwt helper) with claims sub (user id), role,
 * iat, exp and jti. Time claims are checked here against ctx.now(), not by the library's own clock,
 * so tests and simulations control expiry. A token proves only who logged in and when; whether it
 * still works is decided by the user's current state on every call (see iam.ts authorize). */
import { sign, verify } from 'hono/jwt'
import type { Role } from '../../protocol/identity.js'

export interface TokenClaims {
  sub: string
  role: Role
  iat: number
  exp: number
  jti: string
}

export function signToken(claims: TokenClaims, secret: string): Promise<string> {
  return sign({ ...claims }, secret, 'HS256')
}

/** The token's subject if its signature is ours and it has not expired at `nowMs`; else null. */
export async function verifiedSubject(
  token: string,
  secret: string,
  nowMs: number,
): Promise<string | null> {
  let payload: Record<string, unknown>
  try {
    payload = await verify(token, secret, { alg: 'HS256', exp: false, nbf: false, iat: false })
  } catch {
    return null
  }
  const { sub, exp } = payload
  if (typeof sub !== 'string' || typeof exp !== 'number') return null
  return nowMs < exp * 1000 ? sub : null
}
