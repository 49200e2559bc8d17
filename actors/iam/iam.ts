/** @module IAM: owns identities. Users (argon2id password hashes, roles, active flag) and their S3
 * key pairs persist as system records in replica-store and are held in memory; the bootstrap key
 * pair is a SuperUser without a user. Handles iam.lookup-key (the secret behind SigV4), iam.login
 * and iam.authorize (admin JWTs), the admin API's user and credential operations, and in cluster
 * mode the login outcomes of the other nodes (shared-throttle.ts).
 *
 * Invariants: every change is durable before it shows in memory, and changes run one at a time;
 * a change that affects a key the ingress may have cached is announced to the ingress (and
 * acknowledged) before the change's request returns, so the very next S3 request sees it. */
import assert from 'node:assert/strict'
import type { Actor, Context } from '../../protocol/actor.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import type { KeyLookup } from '../../protocol/messages.js'
import { bootstrapPair, createRootUser } from './bootstrap.js'
import { deleteCredentials, issueCredentials } from './credentials.js'
import { exclusively, type IamState } from './iam-state.js'
import { hashPassword } from './passwords.js'
import { ADMIN_DISABLED, authorize, login } from './sessions.js'
import { takeLoginOutcome } from './shared-throttle.js'
import { newLoginThrottle } from './throttle.js'
import { createUser, deleteUser, getUser, listUsers, updateUser } from './user-admin.js'
import { createClusterRoot, reloadRecords, remember } from './remote-changes.js'
import { loadUsers } from './user-records.js'

const INIT_TIMEOUT_MS = 10_000
const JWT_TTL_SECS_DEFAULT = 3600

export const iam: Actor<IamState, 'iam'> = {
  name: 'iam',
  async init(ctx) {
    const deadlineMs = ctx.now() + INIT_TIMEOUT_MS
    const masterKey = ctx.config['SVC_MASTER_KEY']
    const jwtSecret = ctx.config['SVC_JWT_SECRET']
    assert(masterKey !== undefined && jwtSecret !== undefined, 'the runtime passes both secrets')
    const state: IamState = {
      users: new Map(),
      userIdsByName: new Map(),
      keys: new Map(),
      generation: ctx.now(),
      throttle: newLoginThrottle(),
      dummyHash: await hashPassword(ctx, Buffer.from(ctx.randomBytes(32)).toString('hex')),
      jwtSecret,
      jwtTtlSecs: Number(ctx.config['SVC_JWT_TTL_SECS'] ?? JWT_TTL_SECS_DEFAULT),
      masterKey,
      changes: Promise.resolve(),
    }
    const pair = await bootstrapPair(ctx, deadlineMs)
    state.keys.set(pair.accessKey, {
      secretKey: pair.secretKey,
      principal: { userId: 'bootstrap', role: 'SuperUser' },
      generation: state.generation,
    })
    const users = await loadUsers(ctx, deadlineMs)
    // A cluster node waits for its first catalog pull: the root may exist elsewhere already.
    if (ctx.config['SVC_MODE'] !== 'cluster') {
      const root = await createRootUser(ctx, users.length, deadlineMs)
      if (root !== null) users.push(root)
    }
    for (const user of users) remember(state, user)
    if (users.length === 0 && ctx.config['SVC_MODE'] !== 'cluster') {
      ctx.log.warn({}, `admin API disabled: ${ADMIN_DISABLED}`)
    }
    return state
  },
  handlers: {
    'iam.lookup-key': (state, msg) => lookupKey(state, msg.accessKey),
    'iam.login': login,
    'iam.authorize': (state, msg, ctx) => authorize(state, msg.token, ctx),
    'iam.user.list': (state) => listUsers(state),
    'iam.user.create': createUser,
    'iam.user.get': (state, msg) => getUser(state, msg.userId),
    'iam.user.update': updateUser,
    'iam.user.delete': deleteUser,
    'iam.credentials.create': issueCredentials,
    'iam.credentials.delete': deleteCredentials,
    'iam.records-changed': (state, msg, ctx) =>
      reloadRecords(state, ctx, msg.names, msg.requestId, msg.deadlineMs),
    'iam.catalog-synced': (state, _msg, ctx) =>
      exclusively(state, () => createClusterRoot(state, ctx)),
    // Cluster mode: Iam.LoginOutcome from another storage node.
    'peer.request': takeLoginOutcome,
  },
}

function lookupKey(state: IamState, accessKey: string): Result<KeyLookup> {
  const found = state.keys.get(accessKey)
  if (found === undefined) return fail('invalid_access_key', 'unknown access key')
  const { userId } = found.principal
  if (userId !== 'bootstrap' && state.users.get(userId)?.isActive !== true) {
    return fail('access_denied', 'the user of this access key is deactivated')
  }
  // Stamped with the current generation: the ingress caches it unless a newer change was announced.
  return ok({ ...found, generation: state.generation })
}
