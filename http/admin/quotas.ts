/** @module The admin API's bucket quotas: `GET`, `PUT` and `DELETE
 * /api/admin/buckets/{name}/quota`. A quota bounds a bucket's size (`max_size_bytes`) and object
 * count (`max_objects`), null for no bound; it is the bucket setting `quota`, spread through the
 * cluster like every setting, and S3 writes answer to it (http/s3/quota.ts). A GET answers the
 * bounds with the bucket's usage as the cluster counts it. */
import type { Mesh } from '../../protocol/actor.js'
import type { BucketQuota } from '../../protocol/bucket-settings.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import { forgetAccessRules } from '../s3/access.js'
import { isValidBucketName } from '../s3/names.js'
import { readJsonObject } from './body.js'
import { askCoordinator } from './calls.js'
import { sendCode, sendEmpty, sendFailure, sendJson, type AdminContext } from './exchange.js'
import type { JsonObject } from './input.js'

function bucketOf(c: AdminContext): Result<string> {
  const name = c.req.param('name') ?? ''
  return isValidBucketName(name) ? ok(name) : fail('no_such_bucket', 'not a bucket name')
}

/** `max_size_bytes` and `max_objects`, each a whole number of at least 0 or null; a field left
 * out keeps no bound. */
export function parseQuota(body: JsonObject): Result<BucketQuota> {
  const allowed = ['max_size_bytes', 'max_objects']
  if (Object.keys(body).some((name) => !allowed.includes(name))) {
    return fail('invalid_data', `Unknown field; the allowed fields are ${allowed.join(', ')}.`)
  }
  const bound = (name: string): Result<number | null> => {
    const value = body[name] ?? null
    if (value === null || (Number.isSafeInteger(value) && (value as number) >= 0)) {
      return ok(value as number | null)
    }
    return fail('invalid_data', `${name} must be a whole number of at least 0, or null.`)
  }
  const maxBytes = bound('max_size_bytes')
  if (!maxBytes.ok) return maxBytes
  const maxObjects = bound('max_objects')
  if (!maxObjects.ok) return maxObjects
  return ok({ maxBytes: maxBytes.value, maxObjects: maxObjects.value })
}

async function quotaView(c: AdminContext, mesh: Mesh, bucket: string): Promise<Response> {
  const [quota, stats] = await Promise.all([
    askCoordinator(c, mesh, { kind: 'bucket.setting.get', bucket, name: 'quota' }),
    askCoordinator(c, mesh, { kind: 'bucket.stats' }),
  ])
  if (!quota.ok && quota.code !== 'no_such_key') return sendFailure(c, quota)
  if (!stats.ok) return sendFailure(c, stats)
  const used = stats.value.find((entry) => entry.name === bucket)
  if (used === undefined) return sendCode(c, 'no_such_bucket', 'no such bucket')
  const bounds = quota.ok ? (quota.value as BucketQuota) : { maxBytes: null, maxObjects: null }
  return sendJson(c, 200, {
    bucket,
    max_size_bytes: bounds.maxBytes,
    max_objects: bounds.maxObjects,
    size_bytes: used.storageUsedBytes,
    objects: used.objectsCount,
  })
}

export async function getQuota(c: AdminContext, mesh: Mesh): Promise<Response> {
  const bucket = bucketOf(c)
  if (!bucket.ok) return sendFailure(c, bucket)
  return quotaView(c, mesh, bucket.value)
}

export async function putQuota(c: AdminContext, mesh: Mesh): Promise<Response> {
  const bucket = bucketOf(c)
  if (!bucket.ok) return sendFailure(c, bucket)
  const body = await readJsonObject(c.env.incoming)
  if (!body.ok) return sendFailure(c, body)
  const quota = parseQuota(body.value)
  if (!quota.ok) return sendFailure(c, quota)
  const put = await askCoordinator(c, mesh, {
    kind: 'bucket.setting.put',
    bucket: bucket.value,
    name: 'quota',
    value: quota.value,
  })
  forgetAccessRules(bucket.value)
  if (!put.ok) return sendFailure(c, put)
  return quotaView(c, mesh, bucket.value)
}

export async function deleteQuota(c: AdminContext, mesh: Mesh): Promise<Response> {
  const bucket = bucketOf(c)
  if (!bucket.ok) return sendFailure(c, bucket)
  const deleted = await askCoordinator(c, mesh, {
    kind: 'bucket.setting.delete',
    bucket: bucket.value,
    name: 'quota',
  })
  forgetAccessRules(bucket.value)
  if (!deleted.ok) return sendFailure(c, deleted)
  return sendEmpty(c, 204)
}
