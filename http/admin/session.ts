/** @module Admin sessions at the HTTP edge: POST /login turns a username and password into a JWT
 * through iam.login (with the client's address, which iam throttles on: the TCP peer's, or the one
 * a gateway vouched for), and every other route
 * first turns its bearer token into a principal through iam.authorize and requires the SuperUser
 * role. A missing or malformed header is refused, after asking iam only whether the admin API
 * is enabled at all: while no user exists every call answers 403 saying how to enable it, token
 * or not. */
import type { Mesh } from '../../protocol/actor.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import type { Principal } from '../../protocol/messages.js'
import { clientAddress } from '../client-address.js'
import { readJsonObject } from './body.js'
import { askIam } from './calls.js'
import { sendFailure, sendJson, type AdminContext } from './exchange.js'
import { parseBearer, parseLogin } from './input.js'
import { loginJson } from './views.js'

export async function login(c: AdminContext, mesh: Mesh): Promise<Response> {
  const body = await readJsonObject(c.env.incoming)
  if (!body.ok) return sendFailure(c, body)
  const input = parseLogin(body.value)
  if (!input.ok) return sendFailure(c, input)
  const grant = await askIam(c, mesh, {
    kind: 'iam.login',
    username: input.value.username,
    password: input.value.password,
    // Throttling counts failures per address: never one the client chose (client-address.ts).
    clientAddress: clientAddress(c.env.incoming) ?? 'unknown',
  })
  if (!grant.ok) return sendFailure(c, grant)
  return sendJson(c, 200, loginJson(grant.value))
}

/** The caller's principal if its bearer token is valid and its role is SuperUser. */
export async function authorizeSuperUser(c: AdminContext, mesh: Mesh): Promise<Result<Principal>> {
  const token = parseBearer(c.req.header('authorization'))
  if (!token.ok) {
    // An empty token never verifies: iam answers admin_disabled, or unauthorized as we would.
    const enabled = await askIam(c, mesh, { kind: 'iam.authorize', token: '' })
    return !enabled.ok && enabled.code === 'admin_disabled' ? enabled : token
  }
  const principal = await askIam(c, mesh, { kind: 'iam.authorize', token: token.value })
  if (!principal.ok) return principal
  c.set('userId', principal.value.userId)
  if (principal.value.role !== 'SuperUser') {
    return fail('forbidden', `role ${principal.value.role} is not SuperUser`)
  }
  return ok(principal.value)
}
