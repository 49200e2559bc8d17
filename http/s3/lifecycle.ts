/** @module Bucket lifecycle rules on the S3 surface: PutBucketLifecycleConfiguration,
 * GetBucketLifecycleConfiguration and DeleteBucketLifecycle (`?lifecycle` on a bucket). The rules
 * are the bucket setting `lifecycle`; the lifecycle actor (actors/lifecycle/) runs them. */
import { XML_BODY_BYTES_MAX } from '../../protocol/limits.js'
import type { Authenticated } from './authenticate.js'
import { readCheckedBody } from './body.js'
import { deleteBucketSetting, getBucketSetting, putBucketSetting } from './bucket-setting-calls.js'
import { send, sendError, sendXml, type S3Exchange } from './exchange.js'
import { lifecycleConfigurationXml, parseLifecycleConfiguration } from './xml/lifecycle-xml.js'

export async function bucketLifecycle(
  ex: S3Exchange,
  auth: Authenticated,
  bucket: string,
): Promise<void> {
  const named = { BucketName: bucket }
  if (ex.method === 'GET') {
    const reply = await getBucketSetting(ex, bucket, 'lifecycle')
    if (!reply.ok) return sendError(ex, reply.code, reply.detail, named)
    return sendXml(ex, 200, lifecycleConfigurationXml(reply.value))
  }
  if (ex.method === 'DELETE') {
    const reply = await deleteBucketSetting(ex, bucket, 'lifecycle')
    if (!reply.ok) return sendError(ex, reply.code, reply.detail, named)
    return send(ex, 204, {})
  }
  if (ex.method !== 'PUT') return sendError(ex, 'method_not_allowed', '')
  const body = await readCheckedBody(ex, auth, XML_BODY_BYTES_MAX, 'malformed_xml')
  if (!body.ok) return sendError(ex, body.code, body.detail, named)
  const config = parseLifecycleConfiguration(body.value)
  if (!config.ok) return sendError(ex, config.code, config.detail, named)
  const reply = await putBucketSetting(ex, bucket, 'lifecycle', config.value)
  if (!reply.ok) return sendError(ex, reply.code, reply.detail, named)
  send(ex, 200, {})
}
