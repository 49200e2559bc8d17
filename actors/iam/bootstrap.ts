/** @module What iam creates on first start: the bootstrap S3 key pair (from
 * SVC_ACCESS_KEY_ID/SVC_SECRET_ACCESS_KEY, or generated, kept sealed with the master key in
 * replica-store's system records and printed once when generated) and the root SuperUser (from
 * SVC_ROOT_USERNAME/SVC_ROOT_PASSWORD, created only while no user exists, so later starts keep the
 * stored user and its password). */
import assert from 'node:assert/strict'
import type { Context } from '../../protocol/actor.js'
import { EnvironmentError } from '../../protocol/environment-error.js'
import { newAccessKey, newSecretKey } from './random-keys.js'
import { seal, SEAL_IV_BYTES, unseal } from './sealed.js'
import { hashPassword } from './passwords.js'
import { newUserId, saveUser, type UserRecord } from './user-records.js'

const BOOTSTRAP_RECORD = 'iam.bootstrap-credentials'
export const ROOT_USERNAME_DEFAULT = 'root'

export interface Pair {
  accessKey: string
  secretKey: string
}

export async function bootstrapPair(ctx: Context, deadlineMs: number): Promise<Pair> {
  const fromEnv = {
    accessKey: ctx.config['SVC_ACCESS_KEY_ID'],
    secretKey: ctx.config['SVC_SECRET_ACCESS_KEY'],
  }
  if (fromEnv.accessKey !== undefined && fromEnv.secretKey !== undefined) {
    return { accessKey: fromEnv.accessKey, secretKey: fromEnv.secretKey }
  }
  const masterKey = ctx.config['SVC_MASTER_KEY']
  assert(masterKey !== undefined, 'the runtime always passes the master key')
  const stored = await ctx.call('replica-store', {
    kind: 'system.get',
    name: BOOTSTRAP_RECORD,
    requestId: 'iam-init',
    deadlineMs,
  })
  if (!stored.ok) throw new Error(`cannot read bootstrap credentials: ${stored.detail}`)
  if (stored.value !== null) {
    const record = JSON.parse(Buffer.from(stored.value).toString('utf8')) as {
      a: string
      s: string
    }
    const secretKey = unseal(record.s, masterKey)
    if (secretKey === undefined) throw masterKeyMismatch('the bootstrap S3 secret')
    return { accessKey: record.a, secretKey }
  }
  const pair = {
    accessKey: newAccessKey(ctx.randomBytes),
    secretKey: newSecretKey(ctx.randomBytes),
  }
  const record = {
    a: pair.accessKey,
    s: seal(pair.secretKey, masterKey, ctx.randomBytes(SEAL_IV_BYTES)),
  }
  const saved = await ctx.call('replica-store', {
    kind: 'system.put',
    name: BOOTSTRAP_RECORD,
    value: new Uint8Array(Buffer.from(JSON.stringify(record))),
    requestId: 'iam-init',
    deadlineMs,
  })
  if (!saved.ok) throw new Error(`cannot save bootstrap credentials: ${saved.detail}`)
  // Shown once, when generated: the secret is stored sealed and never printed again.
  ctx.log.notice(
    '\nGenerated S3 credentials (shown once; ' +
      'set SVC_ACCESS_KEY_ID/SVC_SECRET_ACCESS_KEY to choose):\n' +
      `  access key: ${pair.accessKey}\n  secret key: ${pair.secretKey}\n\n`,
  )
  return pair
}

/** A sealed secret that this master key does not open: the node was started with another key than
 * the one the data directory's secrets were sealed with. Restarting cannot help. */
export function masterKeyMismatch(what: string): EnvironmentError {
  return new EnvironmentError(
    'SVC_MASTER_KEY',
    `the master key does not open the stored secrets (${what}): start the node with the key ` +
      'they were sealed with (SVC_MASTER_KEY, or master.key in the data directory)',
  )
}

/** The root SuperUser, if SVC_ROOT_PASSWORD is set and no user exists yet; else null. */
export async function createRootUser(
  ctx: Context,
  existingUsers: number,
  deadlineMs: number,
  id: string = newUserId(ctx.randomBytes),
): Promise<UserRecord | null> {
  const password = ctx.config['SVC_ROOT_PASSWORD']
  if (password === undefined || existingUsers > 0) return null
  const user: UserRecord = {
    id,
    username: ctx.config['SVC_ROOT_USERNAME'] ?? ROOT_USERNAME_DEFAULT,
    role: 'SuperUser',
    isActive: true,
    createdMs: ctx.now(),
    passwordHash: await hashPassword(ctx, password),
    credentials: null,
  }
  const saved = await saveUser(ctx, user, 'iam-init', deadlineMs)
  if (!saved.ok) throw new Error(`cannot save the root user: ${saved.detail}`)
  ctx.log.info({ username: user.username, userId: user.id }, 'root user created')
  return user
}
