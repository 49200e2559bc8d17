/** @module A user's S3 key pair: at most one. Issuing replaces the old pair (its access key stops
 * working on the very next request); deleting a pair that does not exist answers
 * no_s3_credentials. The secret is returned once, by the issuing request, and kept sealed. */
import type { Context } from '../../protocol/actor.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import type { IamMsg, IssuedCredentials } from '../../protocol/messages.js'
import { announceKeyChange } from './announce.js'
import { exclusively, indexUserKey, type IamState } from './iam-state.js'
import { newAccessKey, newSecretKey } from './random-keys.js'
import { seal, SEAL_IV_BYTES } from './sealed.js'
import { saveUser, type UserRecord } from './user-records.js'

type Msg<K extends IamMsg['kind']> = Extract<IamMsg, { kind: K }>

export function issueCredentials(
  state: IamState,
  msg: Msg<'iam.credentials.create'>,
  ctx: Context,
): Promise<Result<IssuedCredentials>> {
  return exclusively(state, async () => {
    const user = state.users.get(msg.userId)
    if (user === undefined) return fail('user_not_found', `no user with id ${msg.userId}`)
    let accessKey = newAccessKey(ctx.randomBytes)
    // 120 random bits make a collision practically impossible; checking costs nothing.
    while (state.keys.has(accessKey)) accessKey = newAccessKey(ctx.randomBytes)
    const secretKey = newSecretKey(ctx.randomBytes)
    const sealedSecret = seal(secretKey, state.masterKey, ctx.randomBytes(SEAL_IV_BYTES))
    const updated: UserRecord = { ...user, credentials: { accessKey, sealedSecret } }
    const saved = await saveUser(ctx, updated, msg.requestId, msg.deadlineMs)
    if (!saved.ok) return saved
    state.users.set(updated.id, updated)
    indexUserKey(state, updated, secretKey)
    const old = user.credentials?.accessKey
    if (old !== undefined) {
      state.keys.delete(old)
      const announced = await announceKeyChange(state, ctx, old, msg.requestId, msg.deadlineMs)
      if (!announced.ok) return announced
    }
    return ok({ accessKey, secretKey })
  })
}

export function deleteCredentials(
  state: IamState,
  msg: Msg<'iam.credentials.delete'>,
  ctx: Context,
): Promise<Result<null>> {
  return exclusively(state, async () => {
    const user = state.users.get(msg.userId)
    if (user === undefined) return fail('user_not_found', `no user with id ${msg.userId}`)
    if (user.credentials === null) {
      return fail('no_s3_credentials', `user ${msg.userId} has no S3 credentials`)
    }
    const updated: UserRecord = { ...user, credentials: null }
    const saved = await saveUser(ctx, updated, msg.requestId, msg.deadlineMs)
    if (!saved.ok) return saved
    state.users.set(updated.id, updated)
    state.keys.delete(user.credentials.accessKey)
    const key = user.credentials.accessKey
    return announceKeyChange(state, ctx, key, msg.requestId, msg.deadlineMs)
  })
}
