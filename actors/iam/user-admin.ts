/** @module The admin API's user operations: list, create, get, update, delete. Input was
 * validated by the ingress; here it is asserted. Each change runs exclusively, persists, then
 * updates memory, then announces a changed access key to the ingress before it returns. */
import assert from 'node:assert/strict'
import type { Context } from '../../protocol/actor.js'
import { isAcceptablePassword, isRole, isValidUsername } from '../../protocol/identity.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import type { IamMsg, UserView } from '../../protocol/messages.js'
import { announceKeyChange } from './announce.js'
import { exclusively, type IamState } from './iam-state.js'
import { hashPassword } from './passwords.js'
import {
  newUserId,
  principalOf,
  removeUser,
  saveUser,
  userView,
  type UserRecord,
} from './user-records.js'

type Msg<K extends IamMsg['kind']> = Extract<IamMsg, { kind: K }>

export function listUsers(state: IamState): Result<UserView[]> {
  const users = [...state.users.values()].sort((a, b) => a.createdMs - b.createdMs)
  return ok(users.map(userView))
}

export function getUser(state: IamState, userId: string): Result<UserView> {
  const user = state.users.get(userId)
  if (user === undefined) return fail('user_not_found', `no user with id ${userId}`)
  return ok(userView(user))
}

export function createUser(
  state: IamState,
  msg: Msg<'iam.user.create'>,
  ctx: Context,
): Promise<Result<UserView>> {
  assert(isValidUsername(msg.username) && isRole(msg.role), 'the ingress validates users')
  assert(isAcceptablePassword(msg.password), 'the ingress validates passwords')
  return exclusively(state, async () => {
    if (state.userIdsByName.has(msg.username)) {
      return fail('user_exists', `a user named ${msg.username} already exists`)
    }
    const user: UserRecord = {
      id: newUserId(ctx.randomBytes),
      username: msg.username,
      role: msg.role,
      isActive: true,
      createdMs: ctx.now(),
      passwordHash: await hashPassword(ctx, msg.password),
      credentials: null,
    }
    const saved = await saveUser(ctx, user, msg.requestId, msg.deadlineMs)
    if (!saved.ok) return saved
    state.users.set(user.id, user)
    state.userIdsByName.set(user.username, user.id)
    return ok(userView(user))
  })
}

export function updateUser(
  state: IamState,
  msg: Msg<'iam.user.update'>,
  ctx: Context,
): Promise<Result<UserView>> {
  if (msg.role !== undefined) assert(isRole(msg.role), 'the ingress validates roles')
  if (msg.password !== undefined) assert(isAcceptablePassword(msg.password))
  return exclusively(state, async () => {
    const user = state.users.get(msg.userId)
    if (user === undefined) return fail('user_not_found', `no user with id ${msg.userId}`)
    const passwordHash =
      msg.password === undefined ? user.passwordHash : await hashPassword(ctx, msg.password)
    const updated: UserRecord = {
      ...user,
      role: msg.role ?? user.role,
      isActive: msg.isActive ?? user.isActive,
      passwordHash,
    }
    const saved = await saveUser(ctx, updated, msg.requestId, msg.deadlineMs)
    if (!saved.ok) return saved
    state.users.set(updated.id, updated)
    const key = updated.credentials?.accessKey
    const entry = key === undefined ? undefined : state.keys.get(key)
    if (key !== undefined && entry !== undefined) {
      state.keys.set(key, { ...entry, principal: principalOf(updated) })
      const keyChanged = updated.role !== user.role || updated.isActive !== user.isActive
      if (keyChanged) {
        const announced = await announceKeyChange(state, ctx, key, msg.requestId, msg.deadlineMs)
        if (!announced.ok) return announced
      }
    }
    return ok(userView(updated))
  })
}

export function deleteUser(
  state: IamState,
  msg: Msg<'iam.user.delete'>,
  ctx: Context,
): Promise<Result<null>> {
  return exclusively(state, async () => {
    const user = state.users.get(msg.userId)
    if (user === undefined) return fail('user_not_found', `no user with id ${msg.userId}`)
    const removed = await removeUser(ctx, user.id, msg.requestId, msg.deadlineMs)
    if (!removed.ok) return removed
    state.users.delete(user.id)
    state.userIdsByName.delete(user.username)
    const key = user.credentials?.accessKey
    if (key === undefined) return ok(null)
    state.keys.delete(key)
    return announceKeyChange(state, ctx, key, msg.requestId, msg.deadlineMs)
  })
}
