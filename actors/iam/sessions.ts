/** @module Admin sessions: iam.login checks a password and grants a JWT; iam.authorize turns a
 * token back into a principal from the user's current state, so a token of a user who was deleted,
 * deactivated or demoted stops working at once. A login for an unknown user is checked against a
 * dummy hash and answers exactly as a wrong password does; repeated failures are throttled, across
 * the cluster in cluster mode. While
 * no user exists (no SVC_ROOT_PASSWORD on first start) both answer admin_disabled. */
import type { Context } from '../../protocol/actor.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import type { IamMsg, LoginGrant, Principal } from '../../protocol/messages.js'
import type { IamState } from './iam-state.js'
import { shareLoginOutcome } from './shared-throttle.js'
import { loginDelaySecs, recordFailure, recordSuccess } from './throttle.js'
import { signToken, verifiedSubject } from './tokens.js'
import { principalOf } from './user-records.js'

type LoginMsg = Extract<IamMsg, { kind: 'iam.login' }>

export const ADMIN_DISABLED =
  'no user exists; start the node once with SVC_ROOT_PASSWORD set to create the root SuperUser'
const JTI_BYTES = 16

export async function login(
  state: IamState,
  msg: LoginMsg,
  ctx: Context,
): Promise<Result<LoginGrant>> {
  if (state.users.size === 0) return fail('admin_disabled', ADMIN_DISABLED)
  const { username, clientAddress } = msg
  const delaySecs = loginDelaySecs(state.throttle, username, clientAddress, ctx.now())
  if (delaySecs > 0) {
    return fail('too_many_requests', 'too many failed logins; try again later', delaySecs)
  }
  const userId = state.userIdsByName.get(username)
  const user = userId === undefined ? undefined : state.users.get(userId)
  // The same work whether or not the user exists: one argon2id verification.
  const matches = await ctx.passwords.verify(user?.passwordHash ?? state.dummyHash, msg.password)
  // Re-read after the await: the user may have changed meanwhile.
  const current = userId === undefined ? undefined : state.users.get(userId)
  if (!matches || current === undefined || !current.isActive || current !== user) {
    recordFailure(state.throttle, username, clientAddress, ctx.now())
    // Counted on the other nodes before the answer: the client's next attempt may go to one.
    await shareLoginOutcome(ctx, { username, address: clientAddress, failed: true }, msg)
    return fail('invalid_credentials', 'invalid username or password')
  }
  if (recordSuccess(state.throttle, username)) {
    await shareLoginOutcome(ctx, { username, address: clientAddress, failed: false }, msg)
  }
  const iat = Math.floor(ctx.now() / 1000)
  const exp = iat + state.jwtTtlSecs
  const jti = Buffer.from(ctx.randomBytes(JTI_BYTES)).toString('hex')
  const token = await signToken(
    { sub: current.id, role: current.role, iat, exp, jti },
    state.jwtSecret,
  )
  return ok({ token, expiresAtMs: exp * 1000 })
}

export async function authorize(
  state: IamState,
  token: string,
  ctx: Context,
): Promise<Result<Principal>> {
  if (state.users.size === 0) return fail('admin_disabled', ADMIN_DISABLED)
  const subject = await verifiedSubject(token, state.jwtSecret, ctx.now())
  if (subject === null) return fail('unauthorized', 'the token is invalid or expired')
  const user = state.users.get(subject)
  if (user === undefined || !user.isActive) {
    return fail('unauthorized', 'the token belongs to a deleted or deactivated user')
  }
  return ok(principalOf(user))
}
