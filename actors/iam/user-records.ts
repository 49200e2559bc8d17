/** @module Users as iam stores them: one system record per user (`iam.user.<id>`) in
 * replica-store, JSON with the argon2id hash and the S3 secret sealed with the master key. A record
 * read back is validated field by field: bytes from disk are outside input. */
import type { Context } from '../../protocol/actor.js'
import { isRole, type Role } from '../../protocol/identity.js'
import type { Principal, SystemRecord, UserView } from '../../protocol/messages.js'
import type { Result } from '../../protocol/errors.js'

export const USER_RECORD_PREFIX = 'iam.user.'

export interface UserRecord {
  id: string
  username: string
  role: Role
  isActive: boolean
  createdMs: number
  passwordHash: string
  /** The user's S3 key pair: at most one, the secret sealed (see sealed.ts). */
  credentials: { accessKey: string; sealedSecret: string } | null
}

export function userView(user: UserRecord): UserView {
  return {
    id: user.id,
    username: user.username,
    role: user.role,
    isActive: user.isActive,
    createdMs: user.createdMs,
    accessKey: user.credentials?.accessKey ?? null,
  }
}

/** A random (version 4) UUID drawn from ctx.randomBytes. */
export function newUserId(randomBytes: (length: number) => Uint8Array): string {
  const bytes = Buffer.from(randomBytes(16))
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x40
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80
  const hex = bytes.toString('hex')
  const groups = [hex.slice(0, 8), hex.slice(8, 12), hex.slice(12, 16), hex.slice(16, 20)]
  return [...groups, hex.slice(20)].join('-')
}

export function encodeUser(user: UserRecord): Uint8Array {
  return new Uint8Array(Buffer.from(JSON.stringify(user), 'utf8'))
}

export function decodeUser(record: SystemRecord): UserRecord {
  const value: unknown = JSON.parse(Buffer.from(record.value).toString('utf8'))
  const user = value as Partial<UserRecord>
  const credentials = user.credentials
  const valid =
    typeof value === 'object' &&
    value !== null &&
    typeof user.id === 'string' &&
    record.name === USER_RECORD_PREFIX + user.id &&
    typeof user.username === 'string' &&
    isRole(user.role) &&
    typeof user.isActive === 'boolean' &&
    typeof user.createdMs === 'number' &&
    typeof user.passwordHash === 'string' &&
    (credentials === null ||
      (typeof credentials === 'object' &&
        typeof credentials.accessKey === 'string' &&
        typeof credentials.sealedSecret === 'string'))
  if (!valid) throw new Error(`user record ${record.name} is malformed`)
  return value as UserRecord
}

export async function saveUser(
  ctx: Context,
  user: UserRecord,
  requestId: string,
  deadlineMs: number,
): Promise<Result<null>> {
  return ctx.call('replica-store', {
    kind: 'system.put',
    name: USER_RECORD_PREFIX + user.id,
    value: encodeUser(user),
    requestId,
    deadlineMs,
  })
}

export async function removeUser(
  ctx: Context,
  userId: string,
  requestId: string,
  deadlineMs: number,
): Promise<Result<null>> {
  return ctx.call('replica-store', {
    kind: 'system.delete',
    name: USER_RECORD_PREFIX + userId,
    requestId,
    deadlineMs,
  })
}

export async function loadUsers(ctx: Context, deadlineMs: number): Promise<UserRecord[]> {
  const listed = await ctx.call('replica-store', {
    kind: 'system.list',
    prefix: USER_RECORD_PREFIX,
    requestId: 'iam-init',
    deadlineMs,
  })
  if (!listed.ok) throw new Error(`cannot read users: ${listed.detail}`)
  return listed.value.map(decodeUser)
}

/** Who a user's requests act as. */
export function principalOf(user: UserRecord): Principal {
  return { userId: user.id, role: user.role, username: user.username }
}
