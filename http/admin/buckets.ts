/** @module The admin API's bucket routes: create, delete (with `force`, which empties the bucket
 * first), list a bucket's objects a page at a time, every bucket's stats, and the lifecycle actor's
 * status. Names follow the S3 API's rules (http/s3/names.ts); a name that breaks them cannot exist,
 * so deleting or listing it answers NoSuchBucket without asking the store. */
import assert from 'node:assert/strict'
import type { Mesh } from '../../protocol/actor.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import { CALL_TIMEOUT_MS } from '../../protocol/timing.js'
import { isValidBucketName } from '../s3/names.js'
import { askCoordinator } from './calls.js'
import { sendCode, sendEmpty, sendFailure, sendJson, type AdminContext } from './exchange.js'
import { parseForce, parseListQuery } from './input.js'
import { bucketStatsJson, objectListJson } from './views.js'

const BUCKET_NAME_RULE =
  'A bucket name has 3 to 63 lowercase letters, digits, hyphens and dots, begins and ends with a ' +
  'letter or digit, has no two dots or a dot and a hyphen side by side, is not an IP address ' +
  "and has none of S3's reserved prefixes and suffixes (xn--, sthree-, -s3alias, --ol-s3, ...)."

function existingName(c: AdminContext): Result<string> {
  const name = c.req.param('name') ?? ''
  return isValidBucketName(name) ? ok(name) : fail('no_such_bucket', 'not a bucket name')
}

function queryOf(c: AdminContext): URLSearchParams {
  return new URL(c.req.url).searchParams
}

export async function createBucket(c: AdminContext, mesh: Mesh): Promise<Response> {
  const name = c.req.param('name') ?? ''
  if (!isValidBucketName(name)) return sendCode(c, 'invalid_bucket_name', BUCKET_NAME_RULE)
  // The admin API runs as the signed-in SuperUser, who owns what it creates.
  const owner = c.get('userId')
  assert(owner !== null, 'a bucket route runs after authorization')
  const created = await askCoordinator(c, mesh, { kind: 'bucket.create', bucket: name, owner })
  if (!created.ok) return sendFailure(c, created)
  return sendJson(c, 201, { name: created.value.name })
}

export async function deleteBucket(c: AdminContext, mesh: Mesh): Promise<Response> {
  const force = parseForce(queryOf(c))
  if (!force.ok) return sendFailure(c, force)
  const name = existingName(c)
  if (!name.ok) return sendFailure(c, name)
  const deleted = await askCoordinator(c, mesh, {
    kind: 'bucket.delete',
    bucket: name.value,
    ...(force.value ? { force: true as const } : {}),
  })
  if (!deleted.ok) return sendFailure(c, deleted)
  return sendEmpty(c, 204)
}

export async function listObjects(c: AdminContext, mesh: Mesh): Promise<Response> {
  const list = parseListQuery(queryOf(c))
  if (!list.ok) return sendFailure(c, list)
  const name = existingName(c)
  if (!name.ok) return sendFailure(c, name)
  const { prefix, maxKeys, after } = list.value
  const page = await askCoordinator(c, mesh, {
    kind: 'object.list',
    bucket: name.value,
    prefix,
    delimiter: '',
    after,
    maxKeys,
    withContentType: true,
  })
  if (!page.ok) return sendFailure(c, page)
  return sendJson(c, 200, objectListJson(page.value, prefix))
}

export async function bucketStats(c: AdminContext, mesh: Mesh): Promise<Response> {
  const stats = await askCoordinator(c, mesh, { kind: 'bucket.stats' })
  if (!stats.ok) return sendFailure(c, stats)
  return sendJson(c, 200, stats.value.map(bucketStatsJson))
}

/** The lifecycle actor's progress and counts on this node (`GET /api/admin/lifecycle`). */
export async function lifecycleStatus(c: AdminContext, mesh: Mesh): Promise<Response> {
  const status = await mesh.call('lifecycle', {
    kind: 'lifecycle.status',
    requestId: c.get('requestId'),
    deadlineMs: mesh.now() + CALL_TIMEOUT_MS,
  })
  if (!status.ok) return sendFailure(c, status)
  return sendJson(c, 200, status.value)
}
