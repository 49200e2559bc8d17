/** @module The admin API (SPEC.md section 4) as a Hono sub-app, mounted at /api/admin ahead of the
 * S3 catch-all. One table lists every route with its metrics operation; all but login need a
 * SuperUser's bearer token, checked before the route reads its input. A known path with another
 * method answers 405, any other path under /api/admin 404: nothing under it reaches the S3 API. */
import type { Mesh } from '../../protocol/actor.js'
import { Hono } from 'hono'
import { bucketStats, createBucket, deleteBucket, lifecycleStatus, listObjects } from './buckets.js'
import { deleteQuota, getQuota, putQuota } from './quotas.js'
import { ROUTE_NOT_FOUND } from './errors.js'
import {
  ADMIN_PREFIX,
  exchangeMiddleware,
  sendAdminError,
  sendCode,
  sendFailure,
  type AdminContext,
  type AdminEnv,
} from './exchange.js'
import { authorizeSuperUser, login } from './session.js'
import {
  createCredentials,
  createUser,
  deleteCredentials,
  deleteUser,
  getUser,
  listUsers,
  updateUser,
} from './users.js'

interface AdminRoute {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE'
  /** Relative to /api/admin. */
  path: string
  /** The name /metrics and the log count the route under. */
  operation: string
  /** False for login only. */
  superUserOnly: boolean
  handle(c: AdminContext, mesh: Mesh): Promise<Response>
}

function route(
  method: AdminRoute['method'],
  path: string,
  operation: string,
  handle: AdminRoute['handle'],
): AdminRoute {
  return { method, path, operation, superUserOnly: path !== '/login', handle }
}

const ROUTES: readonly AdminRoute[] = [
  route('POST', '/login', 'AdminLogin', login),
  route('GET', '/users', 'AdminListUsers', listUsers),
  route('POST', '/users', 'AdminCreateUser', createUser),
  route('GET', '/users/:id', 'AdminGetUser', getUser),
  route('PUT', '/users/:id', 'AdminUpdateUser', updateUser),
  route('DELETE', '/users/:id', 'AdminDeleteUser', deleteUser),
  route('POST', '/users/:id/credentials', 'AdminCreateCredentials', createCredentials),
  route('DELETE', '/users/:id/credentials', 'AdminDeleteCredentials', deleteCredentials),
  route('PUT', '/buckets/:name', 'AdminCreateBucket', createBucket),
  route('DELETE', '/buckets/:name', 'AdminDeleteBucket', deleteBucket),
  route('GET', '/buckets/:name/objects', 'AdminListObjects', listObjects),
  route('GET', '/buckets/:name/quota', 'AdminGetBucketQuota', getQuota),
  route('PUT', '/buckets/:name/quota', 'AdminPutBucketQuota', putQuota),
  route('DELETE', '/buckets/:name/quota', 'AdminDeleteBucketQuota', deleteQuota),
  route('GET', '/bucket-stats', 'AdminBucketStats', bucketStats),
  route('GET', '/lifecycle', 'AdminLifecycleStatus', lifecycleStatus),
]

async function run(c: AdminContext, mesh: Mesh, adminRoute: AdminRoute): Promise<Response> {
  c.set('operation', adminRoute.operation)
  c.set('route', ADMIN_PREFIX + adminRoute.path)
  if (adminRoute.superUserOnly) {
    const principal = await authorizeSuperUser(c, mesh)
    if (!principal.ok) return sendFailure(c, principal)
  }
  return adminRoute.handle(c, mesh)
}

export function createAdminApp(mesh: Mesh): Hono<AdminEnv> {
  const admin = new Hono<AdminEnv>()
  admin.use('*', exchangeMiddleware(mesh))
  for (const adminRoute of ROUTES) {
    admin.on(adminRoute.method, adminRoute.path, (c) => run(c, mesh, adminRoute))
  }
  // Registered after every route, so they answer only what no route took.
  for (const path of new Set(ROUTES.map((r) => r.path))) {
    admin.all(path, (c) => {
      c.set('operation', 'AdminMethodNotAllowed')
      c.set('route', ADMIN_PREFIX + path)
      return sendCode(c, 'method_not_allowed', `${c.req.method} ${path}`)
    })
  }
  admin.all('*', (c) => sendAdminError(c, ROUTE_NOT_FOUND))
  admin.onError((error, c) => {
    // A thrown error is our bug: the client gets the fixed 500 text, the log gets the cause.
    const detail = error instanceof Error ? (error.stack ?? error.message) : String(error)
    return sendCode(c, 'internal', detail)
  })
  return admin
}
