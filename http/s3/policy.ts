/** @module Bucket policies on the S3 surface: PutBucketPolicy, GetBucketPolicy, DeleteBucketPolicy
 * (`?policy`) and GetBucketPolicyStatus (`?policyStatus`). The document is checked here against
 * its bucket (protocol/s3-rules/bucket-policy.ts) and kept as the bucket setting `policy`, as it
 * was put; access.ts applies it. */
import {
  isPublicPolicy,
  parseBucketPolicy,
  POLICY_BYTES_MAX,
} from '../../protocol/s3-rules/bucket-policy.js'
import { forgetAccessRules } from './access.js'
import type { Authenticated } from './authenticate.js'
import { readCheckedBody } from './body.js'
import { deleteBucketSetting, getBucketSetting, putBucketSetting } from './bucket-setting-calls.js'
import { send, sendError, sendXml, type S3Exchange } from './exchange.js'
import { newDocument, serialize, text } from './xml/s3-xml.js'

export async function bucketPolicy(
  ex: S3Exchange,
  auth: Authenticated,
  bucket: string,
): Promise<void> {
  const named = { BucketName: bucket }
  if (ex.method === 'GET') {
    const reply = await getBucketSetting(ex, bucket, 'policy')
    if (!reply.ok) return sendError(ex, reply.code, reply.detail, named)
    return send(ex, 200, { 'content-type': 'application/json' }, reply.value.text)
  }
  if (ex.method === 'DELETE') {
    const reply = await deleteBucketSetting(ex, bucket, 'policy')
    forgetAccessRules(bucket)
    if (!reply.ok) return sendError(ex, reply.code, reply.detail, named)
    return send(ex, 204, {})
  }
  if (ex.method !== 'PUT') return sendError(ex, 'method_not_allowed', '')
  const body = await readCheckedBody(ex, auth, POLICY_BYTES_MAX, 'malformed_policy')
  if (!body.ok) return sendError(ex, body.code, body.detail, named)
  let policyText: string
  try {
    policyText = new TextDecoder('utf-8', { fatal: true }).decode(body.value)
  } catch {
    return sendError(ex, 'malformed_policy', 'Policies must be valid UTF-8', named)
  }
  const policy = parseBucketPolicy(policyText, bucket)
  if (!policy.ok) return sendError(ex, policy.code, policy.detail, named)
  const reply = await putBucketSetting(ex, bucket, 'policy', { text: policyText })
  forgetAccessRules(bucket)
  if (!reply.ok) return sendError(ex, reply.code, reply.detail, named)
  send(ex, 204, {})
}

/** GetBucketPolicyStatus: whether the policy makes the bucket public. */
export async function bucketPolicyStatus(ex: S3Exchange, bucket: string): Promise<void> {
  if (ex.method !== 'GET') return sendError(ex, 'method_not_allowed', '')
  const reply = await getBucketSetting(ex, bucket, 'policy')
  if (!reply.ok) return sendError(ex, reply.code, reply.detail, { BucketName: bucket })
  const policy = parseBucketPolicy(reply.value.text, bucket)
  const root = newDocument('PolicyStatus', true)
  text(root, 'IsPublic', policy.ok && isPublicPolicy(policy.value))
  sendXml(ex, 200, serialize(root))
}
