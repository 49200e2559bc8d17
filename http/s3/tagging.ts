/** @module S3 tagging: `?tagging` on an object (Put/Get/DeleteObjectTagging, with `versionId`) and
 * on a bucket (Put/Get/DeleteBucketTagging), and the `x-amz-tagging` header of the writes that
 * take tags (PutObject, CopyObject with `x-amz-tagging-directive`, CreateMultipartUpload). Tags are
 * validated here (protocol/tagging.ts) and travel to the store as object.tagging.* messages and
 * as the bucket setting `tags` (an empty set, as a DELETE sends, deletes it). */
import { fail, ok, type Result } from '../../protocol/errors.js'
import { XML_BODY_BYTES_MAX } from '../../protocol/limits.js'
import { parseTaggingHeader, type Tag, type TagOwner } from '../../protocol/tagging.js'
import { parseTagging, taggingXml } from './xml/tagging-xml.js'
import type { Authenticated } from './authenticate.js'
import { readCheckedBody } from './body.js'
import { getBucketSetting, putBucketSetting } from './bucket-setting-calls.js'
import { askCoordinator, send, sendError, sendXml, type S3Exchange } from './exchange.js'
import { versionHeaders } from './object-headers.js'

/** The tags a write names in `x-amz-tagging`: `{}` without the header. */
export function requestTags(headers: Record<string, string>): Result<{ tags?: Tag[] }> {
  const header = headers['x-amz-tagging']
  if (header === undefined) return ok({})
  const tags = parseTaggingHeader(header)
  return tags.ok ? ok({ tags: tags.value }) : tags
}

/** CopyObject's tags: the source's (COPY, the default), or `x-amz-tagging`'s (REPLACE; none
 * without the header), as `{ tags }` for the message. */
export function copyTags(headers: Record<string, string>): Result<{ tags?: Tag[] }> {
  const directive = (headers['x-amz-tagging-directive'] ?? 'COPY').toUpperCase()
  if (directive === 'COPY') return ok({})
  if (directive !== 'REPLACE') return fail('invalid_argument', 'Unknown tagging directive.')
  const tags = requestTags(headers)
  if (!tags.ok) return tags
  return ok({ tags: tags.value.tags ?? [] })
}

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
  const versionId = ex.query.get('versionId')
  const version = { ...at, ...(versionId === null ? {} : { versionId }) }
  if (ex.method === 'GET') {
    const reply = await askCoordinator(ex, { kind: 'object.tagging.get', ...version })
    if (!reply.ok) return sendError(ex, reply.code, reply.detail)
    return sendXml(ex, 200, taggingXml(reply.value.tags), versionHeaders(reply.value))
  }
  const tags = await tagsToSet(ex, auth, 'object')
  if (!tags.ok) return sendError(ex, tags.code, tags.detail)
  const reply = await askCoordinator(ex, {
    kind: 'object.tagging.put',
    ...version,
    tags: tags.value,
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
