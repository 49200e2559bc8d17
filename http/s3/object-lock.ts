/** @module Object lock on the S3 surface: Put/GetObjectLockConfiguration (`?object-lock` on a
 * bucket), Put/GetObjectRetention (`?retention`) and Put/GetObjectLegalHold (`?legal-hold`) on an
 * object or a version, a bucket created with `x-amz-bucket-object-lock-enabled: true`, and the lock
 * a write gives its version (its `x-amz-object-lock-*` headers or form fields, else the bucket's
 * default retention). The bucket's configuration is the setting `objectLock`, read with the
 * request's access rules (access.ts); a version's lock is its attributes `retention` and
 * `legalHold`. The decisions are protocol/s3-rules/object-lock.ts's; the refusal of a delete is the
 * store's (the coordinator's in a cluster), where the delete happens. */
import { fail, ok, type Result } from '../../protocol/errors.js'
import { XML_BODY_BYTES_MAX } from '../../protocol/limits.js'
import type { ObjectAttributes } from '../../protocol/object-attributes.js'
import {
  defaultRetentionFor,
  lockFromHeaders,
  lockNotEnabled,
  mayChangeRetention,
  retentionUntil,
  versionLockOf,
  type ObjectLockConfiguration,
  type Retention,
} from '../../protocol/s3-rules/object-lock.js'
import { forgetAccessRules, mayBypassGovernance } from './access.js'
import type { Authenticated } from './authenticate.js'
import { readCheckedBody } from './body.js'
import { getBucketSetting, putBucketSetting } from './bucket-setting-calls.js'
import {
  askCoordinator,
  requestedVersion,
  send,
  sendError,
  sendXml,
  type S3Exchange,
} from './exchange.js'
import { versionHeaders } from './object-headers.js'
import {
  legalHoldXml,
  objectLockConfigurationXml,
  parseLegalHold,
  parseObjectLockConfiguration,
  parseRetention,
  retentionXml,
} from './xml/object-lock-xml.js'

const LOCK_ENABLED_HEADER = 'x-amz-bucket-object-lock-enabled'

/** The bucket's configuration as the access check read it; null without object lock. */
function lockOf(ex: S3Exchange): ObjectLockConfiguration | null {
  return ex.access.rules?.objectLock ?? null
}

/** The attributes a write names, with the lock its headers set or its bucket's default retention;
 * lock headers on a bucket without object lock are refused, as S3 refuses them. */
export function lockedAttributes(
  ex: S3Exchange,
  named: Result<{ attributes?: ObjectAttributes }>,
  headers: Readonly<Record<string, string>> = ex.headers,
): Result<{ attributes?: ObjectAttributes }> {
  if (!named.ok) return named
  const nowMs = ex.mesh.now()
  const lock = lockFromHeaders(headers, nowMs)
  if (!lock.ok) return lock
  const config = lockOf(ex)
  if (config === null) return lock.value === null ? named : lockNotEnabled()
  const attributes: ObjectAttributes = { ...named.value.attributes }
  const retention = lock.value?.retention ?? defaultRetentionFor(config, nowMs)
  if (retention !== null) attributes.retention = retention
  if (lock.value?.legalHold !== undefined) attributes.legalHold = lock.value.legalHold
  return ok(Object.keys(attributes).length === 0 ? {} : { attributes })
}

/** CreateBucket's `x-amz-bucket-object-lock-enabled: true`, once the bucket exists: versioning on
 * for good, and object lock without a default retention. */
export async function setCreatedBucketLock(ex: S3Exchange, bucket: string): Promise<Result<null>> {
  if (ex.headers[LOCK_ENABLED_HEADER]?.toLowerCase() !== 'true') return ok(null)
  const versioning = await askCoordinator(ex, {
    kind: 'bucket.versioning.put',
    bucket,
    status: 'Enabled',
  })
  if (!versioning.ok) return versioning
  const set = await putBucketSetting(ex, bucket, 'objectLock', {
    enabled: true,
    defaultRetention: null,
  })
  forgetAccessRules(bucket)
  return set
}

/** PutBucketVersioning may not suspend versioning where object lock needs it. */
export function versioningChangeAllowed(ex: S3Exchange, status: string): Result<null> {
  if (status === 'Enabled' || lockOf(ex) === null) return ok(null)
  return fail(
    'invalid_bucket_state',
    'An Object Lock configuration is present on this bucket, so the versioning state cannot be ' +
      'changed.',
  )
}

export async function bucketObjectLock(
  ex: S3Exchange,
  auth: Authenticated,
  bucket: string,
): Promise<void> {
  const named = { BucketName: bucket }
  if (ex.method === 'GET') {
    const reply = await getBucketSetting(ex, bucket, 'objectLock')
    if (!reply.ok) return sendError(ex, reply.code, reply.detail, named)
    return sendXml(ex, 200, objectLockConfigurationXml(reply.value))
  }
  if (ex.method !== 'PUT') return sendError(ex, 'method_not_allowed', '')
  const body = await readCheckedBody(ex, auth, XML_BODY_BYTES_MAX, 'malformed_xml')
  if (!body.ok) return sendError(ex, body.code, body.detail, named)
  const config = parseObjectLockConfiguration(body.value)
  if (!config.ok) return sendError(ex, config.code, config.detail, named)
  const versioning = await askCoordinator(ex, { kind: 'bucket.versioning.get', bucket })
  if (!versioning.ok) return sendError(ex, versioning.code, versioning.detail, named)
  if (versioning.value.status !== 'Enabled') {
    const detail = 'Versioning must be Enabled on the bucket to apply an Object Lock configuration'
    return sendError(ex, 'invalid_bucket_state', detail, named)
  }
  const reply = await putBucketSetting(ex, bucket, 'objectLock', config.value)
  forgetAccessRules(bucket)
  if (!reply.ok) return sendError(ex, reply.code, reply.detail, named)
  send(ex, 200, {})
}

export async function objectRetention(
  ex: S3Exchange,
  auth: Authenticated,
  at: { bucket: string; key: string },
): Promise<void> {
  const refused = lockOf(ex) === null ? lockNotEnabled() : ok(null)
  if (!refused.ok) return sendError(ex, refused.code, refused.detail)
  const version = requestedVersion(ex, at)
  const held = await askCoordinator(ex, { kind: 'object.attributes.get', ...version })
  if (!held.ok) return sendError(ex, held.code, held.detail)
  const current = versionLockOf(held.value.attributes).retention
  if (ex.method === 'GET') {
    if (current === null) {
      return sendError(ex, 'no_such_object_lock', 'The object has no retention')
    }
    return sendXml(ex, 200, retentionXml(current), versionHeaders(held.value))
  }
  if (ex.method !== 'PUT') return sendError(ex, 'method_not_allowed', '')
  const body = await readCheckedBody(ex, auth, XML_BODY_BYTES_MAX, 'malformed_xml')
  if (!body.ok) return sendError(ex, body.code, body.detail)
  const asked = parseRetention(body.value)
  if (!asked.ok) return sendError(ex, asked.code, asked.detail)
  const nowMs = ex.mesh.now()
  let next: Retention | null = null
  if (asked.value !== null) {
    const until = retentionUntil(asked.value.mode, asked.value.until, nowMs)
    if (!until.ok) return sendError(ex, until.code, until.detail)
    next = until.value
  }
  const allowed = mayChangeRetention(current, next, nowMs, mayBypassGovernance(ex, at))
  if (!allowed.ok) return sendError(ex, allowed.code, allowed.detail)
  const reply = await askCoordinator(ex, {
    kind: 'object.attributes.put',
    ...version,
    attributes: { retention: next ?? { mode: 'OFF', untilMs: 0 } },
  })
  if (!reply.ok) return sendError(ex, reply.code, reply.detail)
  send(ex, 200, versionHeaders(reply.value))
}

export async function objectLegalHold(
  ex: S3Exchange,
  auth: Authenticated,
  at: { bucket: string; key: string },
): Promise<void> {
  const refused = lockOf(ex) === null ? lockNotEnabled() : ok(null)
  if (!refused.ok) return sendError(ex, refused.code, refused.detail)
  const version = requestedVersion(ex, at)
  if (ex.method === 'GET') {
    const held = await askCoordinator(ex, { kind: 'object.attributes.get', ...version })
    if (!held.ok) return sendError(ex, held.code, held.detail)
    const on = held.value.attributes.legalHold === true
    return sendXml(ex, 200, legalHoldXml(on), versionHeaders(held.value))
  }
  if (ex.method !== 'PUT') return sendError(ex, 'method_not_allowed', '')
  const body = await readCheckedBody(ex, auth, XML_BODY_BYTES_MAX, 'malformed_xml')
  if (!body.ok) return sendError(ex, body.code, body.detail)
  const on = parseLegalHold(body.value)
  if (!on.ok) return sendError(ex, on.code, on.detail)
  const reply = await askCoordinator(ex, {
    kind: 'object.attributes.put',
    ...version,
    attributes: { legalHold: on.value },
  })
  if (!reply.ok) return sendError(ex, reply.code, reply.detail)
  send(ex, 200, versionHeaders(reply.value))
}
