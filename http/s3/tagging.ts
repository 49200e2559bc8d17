/** @module S3 tagging: `?tagging` on an object (Put/Get/DeleteObjectTagging, with `versionId`) and
 * on a bucket (Put/Get/DeleteBucketTagging). Tags are validated here (protocol/tagging.ts) and
 * travel to the store as the object's `tags` attribute (object.attributes.*,
 * protocol/object-attributes.ts) and as the bucket setting `tags` (an empty set, as a DELETE
 * sends, deletes it); the `x-amz-tagging` header of the writes that take tags is read with the
 * other attributes (object-attributes.ts). */
import { fail, ok, type Result } from '../../protocol/errors.js'
import { XML_BODY_BYTES_MAX } from '../../protocol/limits.js'
import type { Tag, TagOwner } from '../../protocol/tagging.js'
import { parseTagging, taggingXml } from './xml/tagging-xml.js'
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

/** The tags a PUT sets (its body), or none for a DELETE. */
async function tagsToSet(
  ex: S3Exchange,
  auth: Authenticated,
  owner: TagOwner,
): Promise<Result<Tag[]>> {
  if (ex.method === 'DELETE') return ok([])
  if (ex.method !== 'PUT') return fail('method_not_allowed', '')
  const body = await readCheckedBody(ex, auth, XML_BODY_BYTES_MAX, 'malformed_xml')
  if (!body.ok) return body
  return parseTagging(body.value, owner)
}

export async function objectTagging(
  ex: S3Exchange,
  auth: Authenticated,
  at: { bucket: string; key: string },
): Promise<void> {
  const version = requestedVersion(ex, at)
  if (ex.method === 'GET') {
    const reply = await askCoordinator(ex, { kind: 'object.attributes.get', ...version })
    if (!reply.ok) return sendError(ex, reply.code, reply.detail)
    const tags = reply.value.attributes.tags ?? []
    return sendXml(ex, 200, taggingXml(tags), versionHeaders(reply.value))
  }
  const tags = await tagsToSet(ex, auth, 'object')
  if (!tags.ok) return sendError(ex, tags.code, tags.detail)
  const reply = await askCoordinator(ex, {
    kind: 'object.attributes.put',
    ...version,
    attributes: { tags: tags.value },
  })
  if (!reply.ok) return sendError(ex, reply.code, reply.detail)
  send(ex, ex.method === 'PUT' ? 200 : 204, versionHeaders(reply.value))
}

export async function bucketTagging(
  ex: S3Exchange,
  auth: Authenticated,
  bucket: string,
): Promise<void> {
  if (ex.method === 'GET') {
    const reply = await getBucketSetting(ex, bucket, 'tags')
    if (!reply.ok) return sendError(ex, reply.code, reply.detail, { BucketName: bucket })
    return sendXml(ex, 200, taggingXml(reply.value))
  }
  const tags = await tagsToSet(ex, auth, 'bucket')
  if (!tags.ok) return sendError(ex, tags.code, tags.detail, { BucketName: bucket })
  const reply = await putBucketSetting(ex, bucket, 'tags', tags.value)
  if (!reply.ok) return sendError(ex, reply.code, reply.detail, { BucketName: bucket })
  send(ex, 204, {})
}
