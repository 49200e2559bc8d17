/** @module The admin API's user and S3 credential routes: list, create, get, update and delete
 * users; issue and delete a user's key pair. Input is validated here and sent to iam, which
 * asserts it. The secret key appears only in the response that issues it. */
import type { Mesh } from '../../protocol/actor.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import { readJsonObject } from './body.js'
import { askIam } from './calls.js'
import { sendEmpty, sendFailure, sendJson, type AdminContext } from './exchange.js'
import { isUserId, parseNewUser, parseUserChange } from './input.js'
import { userJson } from './views.js'

/** The `:id` of the path, if it can name a user at all (anything else cannot exist). */
function userIdOf(c: AdminContext): Result<string> {
  const id = c.req.param('id') ?? ''
  return isUserId(id) ? ok(id) : fail('user_not_found', 'not a user id')
}

export async function listUsers(c: AdminContext, mesh: Mesh): Promise<Response> {
  const users = await askIam(c, mesh, { kind: 'iam.user.list' })
  if (!users.ok) return sendFailure(c, users)
  return sendJson(c, 200, users.value.map(userJson))
}

export async function createUser(c: AdminContext, mesh: Mesh): Promise<Response> {
  const body = await readJsonObject(c.env.incoming)
  if (!body.ok) return sendFailure(c, body)
  const input = parseNewUser(body.value)
  if (!input.ok) return sendFailure(c, input)
  const user = await askIam(c, mesh, { kind: 'iam.user.create', ...input.value })
  if (!user.ok) return sendFailure(c, user)
  return sendJson(c, 201, userJson(user.value))
}

export async function getUser(c: AdminContext, mesh: Mesh): Promise<Response> {
  const userId = userIdOf(c)
  if (!userId.ok) return sendFailure(c, userId)
  const user = await askIam(c, mesh, { kind: 'iam.user.get', userId: userId.value })
  if (!user.ok) return sendFailure(c, user)
  return sendJson(c, 200, userJson(user.value))
}

export async function updateUser(c: AdminContext, mesh: Mesh): Promise<Response> {
  const userId = userIdOf(c)
  if (!userId.ok) return sendFailure(c, userId)
  const body = await readJsonObject(c.env.incoming)
  if (!body.ok) return sendFailure(c, body)
  const change = parseUserChange(body.value)
  if (!change.ok) return sendFailure(c, change)
  const message = { kind: 'iam.user.update' as const, userId: userId.value, ...change.value }
  const user = await askIam(c, mesh, message)
  if (!user.ok) return sendFailure(c, user)
  return sendJson(c, 200, userJson(user.value))
}

export async function deleteUser(c: AdminContext, mesh: Mesh): Promise<Response> {
  const userId = userIdOf(c)
  if (!userId.ok) return sendFailure(c, userId)
  const deleted = await askIam(c, mesh, { kind: 'iam.user.delete', userId: userId.value })
  if (!deleted.ok) return sendFailure(c, deleted)
  return sendEmpty(c, 204)
}

export async function createCredentials(c: AdminContext, mesh: Mesh): Promise<Response> {
  const userId = userIdOf(c)
  if (!userId.ok) return sendFailure(c, userId)
  const issued = await askIam(c, mesh, { kind: 'iam.credentials.create', userId: userId.value })
  if (!issued.ok) return sendFailure(c, issued)
  const { accessKey, secretKey } = issued.value
  return sendJson(c, 201, { access_key: accessKey, secret_key: secretKey })
}

export async function deleteCredentials(c: AdminContext, mesh: Mesh): Promise<Response> {
  const userId = userIdOf(c)
  if (!userId.ok) return sendFailure(c, userId)
  const deleted = await askIam(c, mesh, { kind: 'iam.credentials.delete', userId: userId.value })
  if (!deleted.ok) return sendFailure(c, deleted)
  return sendEmpty(c, 204)
}
