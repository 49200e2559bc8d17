/** @module Cluster mode: users changed through another node. The store applies their records and
 * then tells iam the names (iam.records-changed); iam reads each record back and replaces what it
 * holds in memory, and announces the access keys that stopped or changed meaning to every ingress,
 * so the change is in force here before the store acknowledges it to the node that made it. The
 * root user comes into being once per cluster: a node creates it only after its first catalog
 * pull (iam.catalog-synced) found no user, and under an id derived from the cluster and user names,
 * so two nodes creating it at once write the same record. */
import { createHash } from 'node:crypto'
import type { Context } from '../../protocol/actor.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import { createRootUser, masterKeyMismatch, ROOT_USERNAME_DEFAULT } from './bootstrap.js'
import { ADMIN_DISABLED } from './sessions.js'
import { announceKeyChange } from './announce.js'
import { indexUserKey, type IamState } from './iam-state.js'
import { unseal } from './sealed.js'
import { decodeUser, newUserId, USER_RECORD_PREFIX, type UserRecord } from './user-records.js'

/** Names one notice carries at most (a page of applied records). */
const NAMES_MAX = 1_000

export async function reloadRecords(
  state: IamState,
  ctx: Context,
  names: readonly string[],
  requestId: string,
  deadlineMs: number,
): Promise<Result<null>> {
  for (const name of names.slice(0, NAMES_MAX)) {
    if (!name.startsWith(USER_RECORD_PREFIX)) continue
    const stored = await ctx.call('replica-store', {
      kind: 'system.get',
      name,
      requestId,
      deadlineMs,
    })
    if (!stored.ok) return stored
    const id = name.slice(USER_RECORD_PREFIX.length)
    const before = state.users.get(id)
    forget(state, before)
    if (stored.value !== null) remember(state, decodeUser({ name, value: stored.value }))
    const oldKey = before?.credentials?.accessKey
    if (oldKey !== undefined) {
      const announced = await announceKeyChange(state, ctx, oldKey, requestId, deadlineMs)
      if (!announced.ok) return announced
    }
  }
  return ok(null)
}

function forget(state: IamState, user: UserRecord | undefined): void {
  if (user === undefined) return
  state.users.delete(user.id)
  if (state.userIdsByName.get(user.username) === user.id) state.userIdsByName.delete(user.username)
  if (user.credentials !== null) state.keys.delete(user.credentials.accessKey)
}

export function remember(state: IamState, user: UserRecord): void {
  state.users.set(user.id, user)
  state.userIdsByName.set(user.username, user.id)
  if (user.credentials === null) return
  const secretKey = unseal(user.credentials.sealedSecret, state.masterKey)
  if (secretKey === undefined) throw masterKeyMismatch(`the S3 secret of user ${user.username}`)
  indexUserKey(state, user, secretKey)
}

/** The root user's id in cluster mode: the same on every node of the cluster. */
export function clusterRootId(clusterName: string, username: string): string {
  const digest = createHash('sha256').update(`${clusterName}\0root\0${username}`).digest()
  return newUserId(() => new Uint8Array(digest.subarray(0, 16)))
}

/** Attempts at creating the cluster's root user, a second apart: a creation whose publication
 * failed (a node did not take it) is committed here all the same, and read back. */
const ROOT_ATTEMPTS_MAX = 5
const ROOT_ATTEMPT_MS = 5_000
const ROOT_RETRY_MS = 1_000

/** Cluster mode, after the first catalog pull: the root user if the cluster has no user yet. */
export async function createClusterRoot(state: IamState, ctx: Context): Promise<Result<null>> {
  const username = ctx.config['SVC_ROOT_USERNAME'] ?? ROOT_USERNAME_DEFAULT
  const id = clusterRootId(ctx.config['SVC_CLUSTER_NAME'] ?? '', username)
  for (let attempt = 1; attempt <= ROOT_ATTEMPTS_MAX; attempt++) {
    const deadlineMs = ctx.now() + ROOT_ATTEMPT_MS
    try {
      const root = await createRootUser(ctx, state.users.size, deadlineMs, id)
      if (root !== null) remember(state, root)
      if (state.users.size === 0) ctx.log.warn({}, `admin API disabled: ${ADMIN_DISABLED}`)
      return ok(null)
    } catch (error) {
      ctx.log.warn({ err: String(error), attempt }, 'root user not created yet')
      const reloaded = await reloadRecords(
        state,
        ctx,
        [USER_RECORD_PREFIX + id],
        'root',
        deadlineMs,
      )
      if (reloaded.ok && state.users.size > 0) return ok(null)
      await new Promise<void>((resolve) => ctx.after(ROOT_RETRY_MS, resolve))
    }
  }
  return fail('unavailable', `the root user could not be created in ${ROOT_ATTEMPTS_MAX} attempts`)
}
