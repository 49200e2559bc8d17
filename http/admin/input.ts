/** @module What the admin API accepts from clients, validated here as pure functions (iam and the
 * store assert rather than validate): JSON bodies of login, user creation and update, the bearer
 * header, user ids, and the query of bucket deletion and object listing. Each answers a Result with
 * the code the Admin error table names; a detail names the field to correct, never its value. */
import { fail, ok, type Result } from '../../protocol/errors.js'
import {
  isAcceptablePassword,
  isRole,
  isValidUsername,
  PASSWORD_BYTES_MAX,
  type Role,
} from '../../protocol/identity.js'
import { KEY_BYTES_MAX, LIST_KEYS_MAX } from '../../protocol/limits.js'
import { decodeContinuationToken } from '../s3/xml/s3-xml.js'

/** Request bodies are small JSON documents; anything larger is refused unread. */
export const ADMIN_BODY_BYTES_MAX = 64 * 1024

export type JsonObject = Record<string, unknown>

/** A body that is UTF-8 JSON holding one object. */
export function parseJsonObject(bytes: Uint8Array): Result<JsonObject> {
  if (bytes.length > ADMIN_BODY_BYTES_MAX) {
    return fail('invalid_data', `The body is larger than ${ADMIN_BODY_BYTES_MAX} bytes.`)
  }
  let value: unknown
  try {
    value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes))
  } catch {
    return fail('invalid_data', 'The body is not valid JSON.')
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return fail('invalid_data', 'The body must be a JSON object.')
  }
  return ok(value as JsonObject)
}

function unknownField(body: JsonObject, allowed: readonly string[]): string | undefined {
  return Object.keys(body).find((name) => !allowed.includes(name))
}

function refuseUnknown(body: JsonObject, allowed: readonly string[]): Result<null> {
  const extra = unknownField(body, allowed)
  if (extra === undefined) return ok(null)
  return fail('invalid_data', `Unknown field; the allowed fields are ${allowed.join(', ')}.`)
}

export interface LoginInput {
  username: string
  password: string
}

/** A username or password that cannot belong to any account answers exactly as a wrong password
 * does (SPEC.md section 4, rule 1), without costing iam a hash. */
export function parseLogin(body: JsonObject): Result<LoginInput> {
  const known = refuseUnknown(body, ['username', 'password'])
  if (!known.ok) return known
  const { username, password } = body
  if (typeof username !== 'string' || typeof password !== 'string') {
    return fail('invalid_data', 'username and password must be strings.')
  }
  if (!isValidUsername(username) || !isAcceptablePassword(password)) {
    return fail('invalid_credentials', 'the username or password cannot match any account')
  }
  return ok({ username, password })
}

export interface NewUserInput {
  username: string
  password: string
  role: Role
}

const PASSWORD_RULE = `password must be a string of 1 character to ${PASSWORD_BYTES_MAX} bytes.`
const ROLE_RULE = 'role must be Reader, Writer or SuperUser.'

export function parseNewUser(body: JsonObject): Result<NewUserInput> {
  const known = refuseUnknown(body, ['username', 'password', 'role'])
  if (!known.ok) return known
  const { username, password, role } = body
  if (typeof username !== 'string') return fail('invalid_data', 'username must be a string.')
  if (!isValidUsername(username)) {
    return fail('invalid_username', 'A username has 3 to 32 ASCII letters, digits or underscores.')
  }
  if (typeof password !== 'string' || !isAcceptablePassword(password)) {
    return fail('invalid_data', PASSWORD_RULE)
  }
  if (!isRole(role)) return fail('invalid_data', ROLE_RULE)
  return ok({ username, password, role })
}

export interface UserChangeInput {
  password?: string
  role?: Role
  isActive?: boolean
}

export function parseUserChange(body: JsonObject): Result<UserChangeInput> {
  const known = refuseUnknown(body, ['password', 'role', 'is_active'])
  if (!known.ok) return known
  const change: UserChangeInput = {}
  const { password, role, is_active: isActive } = body
  if (password !== undefined) {
    if (typeof password !== 'string' || !isAcceptablePassword(password)) {
      return fail('invalid_data', PASSWORD_RULE)
    }
    change.password = password
  }
  if (role !== undefined) {
    if (!isRole(role)) return fail('invalid_data', ROLE_RULE)
    change.role = role
  }
  if (isActive !== undefined) {
    if (typeof isActive !== 'boolean') return fail('invalid_data', 'is_active must be a boolean.')
    change.isActive = isActive
  }
  if (Object.keys(change).length === 0) {
    return fail('invalid_data', 'Give at least one of password, role, is_active.')
  }
  return ok(change)
}

/** RFC 6750's b64token, which every JWT is; 8 KiB is far above any token iam signs. */
const BEARER_PATTERN = /^Bearer +([A-Za-z0-9._~+/-]+=*) *$/i
const BEARER_CHARS_MAX = 8192

/** The token of an `Authorization: Bearer <token>` header. */
export function parseBearer(header: string | undefined): Result<string> {
  if (header === undefined || header.length > BEARER_CHARS_MAX) {
    return fail('unauthorized', 'no bearer token')
  }
  const match = BEARER_PATTERN.exec(header)
  if (match?.[1] === undefined) return fail('unauthorized', 'malformed bearer token')
  return ok(match[1])
}

/** iam names users by random (version 4) UUIDs in lower case; nothing else can name a user. */
export function isUserId(value: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(value)
}

/** DELETE /buckets/{name}?force=true|false, false when absent. */
export function parseForce(query: URLSearchParams): Result<boolean> {
  const values = query.getAll('force')
  if (values.length === 0) return ok(false)
  if (values.length === 1 && values[0] === 'true') return ok(true)
  if (values.length === 1 && values[0] === 'false') return ok(false)
  return fail('invalid_data', 'force must be true or false.')
}

export interface ListInput {
  prefix: string
  maxKeys: number
  /** List keys strictly after this one (decoded from the continuation token), or ''. */
  after: string
}

/** The query of GET /buckets/{name}/objects. max-keys above 1000 is clamped, as S3 does. */
export function parseListQuery(query: URLSearchParams): Result<ListInput> {
  for (const name of ['prefix', 'max-keys', 'continuation-token']) {
    if (query.getAll(name).length > 1) return fail('invalid_data', `${name} is given twice.`)
  }
  const prefix = query.get('prefix') ?? ''
  if (Buffer.byteLength(prefix, 'utf8') > KEY_BYTES_MAX) {
    return fail('invalid_data', `prefix is longer than ${KEY_BYTES_MAX} bytes.`)
  }
  const maxKeysText = query.get('max-keys')
  // Ten digits at most: any count that long is clamped anyway, and stays a safe integer.
  if (maxKeysText !== null && !/^\d{1,10}$/.test(maxKeysText)) {
    return fail('invalid_data', 'max-keys must be an integer from 0 to 1000.')
  }
  const maxKeys =
    maxKeysText === null ? LIST_KEYS_MAX : Math.min(Number(maxKeysText), LIST_KEYS_MAX)
  const token = query.get('continuation-token')
  if (token === null) return ok({ prefix, maxKeys, after: '' })
  const after = decodeContinuationToken(token)
  if (!after.ok) return fail('invalid_data', 'continuation-token is not one this service issued.')
  return ok({ prefix, maxKeys, after: after.value })
}
