/** @module Bucket CORS on the S3 surface: PutBucketCors, GetBucketCors and DeleteBucketCors
 * (`?cors` on a bucket, authenticated like every bucket operation), preflight requests (OPTIONS,
 * answered without authentication, as Amazon S3 answers them: a browser sends no credentials with
 * a preflight), and the Access-Control-* headers of actual requests that carry Origin.
 *
 * An actual request with Origin costs one call for its bucket's rules, made before authentication
 * so that error answers (a bad signature, AccessDenied, NoSuchKey) carry the headers too and
 * browser code can read them, as with S3; a request without Origin makes no call at all.
 * Validation and matching are protocol/cors.ts's, the XML codec xml/cors-xml.ts's; the rules live
 * in replica-store as the bucket setting `cors` (protocol/bucket-settings.ts). */
import assert from 'node:assert/strict'
import {
  corsHeaders,
  isCorsMethod,
  matchCorsRule,
  requestedHeaders,
  type CorsConfiguration,
} from '../../protocol/cors.js'
import { corsConfigurationXml, parseCorsConfiguration } from './xml/cors-xml.js'
import type { Result } from '../../protocol/errors.js'
import { CORS_BODY_BYTES_MAX } from '../../protocol/limits.js'
import type { Authenticated } from './authenticate.js'
import { readCheckedBody } from './body.js'
import { deleteBucketSetting, getBucketSetting, putBucketSetting } from './bucket-setting-calls.js'
import { send, sendError, sendXml, type S3Exchange } from './exchange.js'

/** S3's words for a preflight no rule allows (its spelling of "evaluation" included). */
const NOT_ALLOWED =
  'CORSResponse: This CORS request is not allowed. This is usually because the evalution of ' +
  'Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers are ' +
  "not whitelisted by the resource's CORS spec."
const NOT_ENABLED = 'CORSResponse: CORS is not enabled for this bucket.'
const NO_BUCKET = 'CORSResponse: Bucket not found'

function corsRules(ex: S3Exchange, bucket: string): Promise<Result<CorsConfiguration>> {
  return getBucketSetting(ex, bucket, 'cors')
}

export async function putBucketCors(
  ex: S3Exchange,
  auth: Authenticated,
  bucket: string,
): Promise<void> {
  const body = await readCheckedBody(ex, auth, CORS_BODY_BYTES_MAX, 'max_message_length_exceeded')
  if (!body.ok) return sendError(ex, body.code, body.detail)
  const cors = parseCorsConfiguration(body.value)
  if (!cors.ok) return sendError(ex, cors.code, cors.detail)
  const reply = await putBucketSetting(ex, bucket, 'cors', cors.value)
  if (!reply.ok) return sendError(ex, reply.code, reply.detail, { BucketName: bucket })
  send(ex, 200, {})
}

export async function getBucketCors(ex: S3Exchange, bucket: string): Promise<void> {
  const reply = await corsRules(ex, bucket)
  if (!reply.ok) return sendError(ex, reply.code, reply.detail, { BucketName: bucket })
  sendXml(ex, 200, corsConfigurationXml(reply.value))
}

export async function deleteBucketCors(ex: S3Exchange, bucket: string): Promise<void> {
  const reply = await deleteBucketSetting(ex, bucket, 'cors')
  if (!reply.ok) return sendError(ex, reply.code, reply.detail, { BucketName: bucket })
  send(ex, 204, {})
}

/** Answers an OPTIONS request as S3 does: 400 BadRequest without Origin; 403 AccessForbidden
 * (with the requested Method and the ResourceType) when the bucket does not exist, has no rules,
 * or no rule allows the origin, method and headers; 400 BadRequest when Access-Control-Request-
 * Method is missing or not a CORS method; otherwise 200 with the matching rule's headers. */
export async function preflight(ex: S3Exchange): Promise<void> {
  assert.equal(ex.method, 'OPTIONS')
  const origin = ex.headers['origin']
  if (origin === undefined) {
    return sendError(ex, 'bad_request', 'Insufficient information. Origin request header needed.')
  }
  const method = ex.headers['access-control-request-method']
  const { bucket, key } = ex.target
  const forbidden = (detail: string, resourceType: 'BUCKET' | 'OBJECT'): void => {
    sendError(ex, 'cors_forbidden', detail, {
      Method: method ?? 'OPTIONS',
      ResourceType: resourceType,
    })
  }
  if (bucket === null) return forbidden(NO_BUCKET, 'BUCKET')
  const rules = await corsRules(ex, bucket)
  if (!rules.ok) {
    if (rules.code === 'no_such_bucket') return forbidden(NO_BUCKET, 'BUCKET')
    if (rules.code === 'no_such_cors_configuration') return forbidden(NOT_ENABLED, 'BUCKET')
    return sendError(ex, rules.code, rules.detail)
  }
  if (method === undefined || !isCorsMethod(method)) {
    return sendError(
      ex,
      'bad_request',
      `Invalid Access-Control-Request-Method: ${method ?? 'null'}`,
    )
  }
  const headers = requestedHeaders(ex.headers['access-control-request-headers'])
  const request = { origin, method, headers }
  const rule = matchCorsRule(rules.value, request)
  if (rule === undefined) return forbidden(NOT_ALLOWED, key === null ? 'BUCKET' : 'OBJECT')
  send(ex, 200, { ...corsHeaders(rule, request), 'content-length': 0 })
}

/** For an actual request carrying Origin: sets the headers of the first rule that allows its origin
 * and method on the response, whatever the response turns out to be. No bucket, no rules, no match
 * or a store that cannot answer: the request goes on without them (a browser then withholds the
 * response from the page, as it would from S3). */
export async function addCorsHeaders(ex: S3Exchange): Promise<void> {
  const origin = ex.headers['origin']
  const bucket = ex.target.bucket
  assert(origin !== undefined)
  if (bucket === null) return
  const rules = await corsRules(ex, bucket)
  if (!rules.ok) return
  const request = { origin, method: ex.method, headers: [] }
  const rule = matchCorsRule(rules.value, request)
  if (rule === undefined) return
  for (const [name, value] of Object.entries(corsHeaders(rule, request))) {
    ex.outgoing.setHeader(name, value)
  }
}

/** `?cors` on a bucket: GET, PUT or DELETE; any other method is 405, never another operation. */
export async function bucketCors(
  ex: S3Exchange,
  auth: Authenticated,
  bucket: string,
): Promise<void> {
  switch (ex.method) {
    case 'GET':
      return getBucketCors(ex, bucket)
    case 'PUT':
      return putBucketCors(ex, auth, bucket)
    case 'DELETE':
      return deleteBucketCors(ex, bucket)
    default:
      return sendError(
        ex,
        'method_not_allowed',
        'The specified method is not allowed against this resource.',
      )
  }
}
