/** @module Canned ACLs on the S3 surface: GetBucketAcl and PutBucketAcl, GetObjectAcl and
 * PutObjectAcl (`?acl`, with `versionId` on an object), and `x-amz-acl` on CreateBucket. A bucket's
 * ACL is the bucket setting `acl` (none is private), an object's the version's attribute `acl`
 * (protocol/object-attributes.ts); a PUT names it by `x-amz-acl` or by a body that lists its
 * grants (xml/acl-xml.ts). What each grants is protocol/s3-rules/access.ts's. */
import { fail, ok, type Result } from '../../protocol/errors.js'
import { XML_BODY_BYTES_MAX } from '../../protocol/limits.js'
import { forgetAccessRules } from './access.js'
import type { Authenticated } from './authenticate.js'
import { readCheckedBody } from './body.js'
import { deleteBucketSetting, getBucketSetting, putBucketSetting } from './bucket-setting-calls.js'
import { ownerOf } from './buckets.js'
import {
  askCoordinator,
  requestedVersion,
  send,
  sendError,
  sendXml,
  type S3Exchange,
} from './exchange.js'
import { versionHeaders } from './object-headers.js'
import { aclXml, parseAclBody, type CannedAcl } from './xml/acl-xml.js'

/** The canned ACL a PUT ?acl names: its x-amz-acl (unsupported.ts refused those not held), or
 * its body; not both, as S3 says. */
async function aclToSet(ex: S3Exchange, auth: Authenticated): Promise<Result<CannedAcl>> {
  const body = await readCheckedBody(ex, auth, XML_BODY_BYTES_MAX, 'malformed_acl')
  if (!body.ok) return body
  const canned = ex.headers['x-amz-acl']
  if (canned !== undefined) {
    if (body.value.length > 0) {
      return fail('invalid_request', 'Specifying both Canned ACLs and Header Grants is not allowed')
    }
    // bucket-owner-full-control on an object is true of every object: private in effect.
    return ok(canned === 'public-read' || canned === 'authenticated-read' ? canned : 'private')
  }
  if (body.value.length === 0) {
    return fail('malformed_acl', 'an ACL needs x-amz-acl or an AccessControlPolicy body')
  }
  return parseAclBody(body.value)
}

/** x-amz-acl of CreateBucket, once the bucket exists. */
export async function setCreatedBucketAcl(ex: S3Exchange, bucket: string): Promise<Result<null>> {
  const canned = ex.headers['x-amz-acl']
  if (canned !== 'public-read' && canned !== 'authenticated-read') return ok(null)
  const reply = await putBucketSetting(ex, bucket, 'acl', { canned })
  forgetAccessRules(bucket)
  return reply
}

export async function bucketAcl(
  ex: S3Exchange,
  auth: Authenticated,
  bucket: string,
): Promise<void> {
  const named = { BucketName: bucket }
  if (ex.method === 'GET') {
    const reply = await getBucketSetting(ex, bucket, 'acl')
    if (!reply.ok && reply.code !== 'no_such_key') {
      return sendError(ex, reply.code, reply.detail, named)
    }
    return sendXml(ex, 200, aclXml(ownerOf(ex), reply.ok ? reply.value.canned : 'private'))
  }
  if (ex.method !== 'PUT') return sendError(ex, 'method_not_allowed', '')
  const canned = await aclToSet(ex, auth)
  if (!canned.ok) return sendError(ex, canned.code, canned.detail, named)
  const reply =
    canned.value === 'private'
      ? await deleteBucketSetting(ex, bucket, 'acl')
      : await putBucketSetting(ex, bucket, 'acl', { canned: canned.value })
  forgetAccessRules(bucket)
  if (!reply.ok) return sendError(ex, reply.code, reply.detail, named)
  send(ex, 200, {})
}

export async function objectAcl(
  ex: S3Exchange,
  auth: Authenticated,
  at: { bucket: string; key: string },
): Promise<void> {
  const version = requestedVersion(ex, at)
  if (ex.method === 'GET') {
    const reply = await askCoordinator(ex, { kind: 'object.attributes.get', ...version })
    if (!reply.ok) return sendError(ex, reply.code, reply.detail)
    const canned = reply.value.attributes.acl ?? 'private'
    return sendXml(ex, 200, aclXml(ownerOf(ex), canned), versionHeaders(reply.value))
  }
  if (ex.method !== 'PUT') return sendError(ex, 'method_not_allowed', '')
  const canned = await aclToSet(ex, auth)
  if (!canned.ok) return sendError(ex, canned.code, canned.detail)
  const reply = await askCoordinator(ex, {
    kind: 'object.attributes.put',
    ...version,
    attributes: { acl: canned.value },
  })
  if (!reply.ok) return sendError(ex, reply.code, reply.detail)
  send(ex, 200, versionHeaders(reply.value))
}
