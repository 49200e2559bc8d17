/** @module Unit tests of http/s3/errors.ts. Goal: every ErrorCode maps to Amazon S3's exact Code
 * and HTTP status, only server-side failures are 5xx, and 5xx messages reveal nothing. Method: a
 * table typed `Record<ErrorCode, ...>` (so it cannot miss a code) compared with s3ErrorFor for each
 * code. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import type { ErrorCode } from '../../protocol/errors.js'
import { s3ErrorFor } from '../../http/s3/errors.js'

const EXPECTED: Record<ErrorCode, [s3Code: string, status: number]> = {
  no_such_bucket: ['NoSuchBucket', 404],
  no_such_key: ['NoSuchKey', 404],
  no_such_upload: ['NoSuchUpload', 404],
  no_such_version: ['NoSuchVersion', 404],
  bucket_exists: ['BucketAlreadyExists', 409],
  bucket_owned_by_you: ['BucketAlreadyOwnedByYou', 409],
  bucket_not_empty: ['BucketNotEmpty', 409],
  invalid_bucket_name: ['InvalidBucketName', 400],
  invalid_location_constraint: ['InvalidLocationConstraint', 400],
  access_denied: ['AccessDenied', 403],
  invalid_access_key: ['InvalidAccessKeyId', 403],
  signature_mismatch: ['SignatureDoesNotMatch', 403],
  request_time_skewed: ['RequestTimeTooSkewed', 403],
  expired_request: ['AccessDenied', 403],
  authorization_malformed: ['AuthorizationHeaderMalformed', 400],
  content_sha256_mismatch: ['XAmzContentSHA256Mismatch', 400],
  invalid_argument: ['InvalidArgument', 400],
  invalid_request: ['InvalidRequest', 400],
  invalid_digest: ['InvalidDigest', 400],
  bad_digest: ['BadDigest', 400],
  checksum_mismatch: ['BadDigest', 400],
  key_too_long: ['KeyTooLongError', 400],
  metadata_too_large: ['MetadataTooLarge', 400],
  entity_too_large: ['EntityTooLarge', 400],
  entity_too_small: ['EntityTooSmall', 400],
  invalid_part: ['InvalidPart', 400],
  invalid_part_order: ['InvalidPartOrder', 400],
  invalid_part_number: ['InvalidPart', 400],
  incomplete_body: ['IncompleteBody', 400],
  missing_content_length: ['MissingContentLength', 411],
  malformed_xml: ['MalformedXML', 400],
  invalid_uri: ['InvalidURI', 400],
  precondition_failed: ['PreconditionFailed', 412],
  not_modified: ['NotModified', 304],
  invalid_range: ['InvalidRange', 416],
  not_implemented: ['NotImplemented', 501],
  method_not_allowed: ['MethodNotAllowed', 405],
  busy: ['SlowDown', 503],
  timeout: ['ServiceUnavailable', 503],
  unavailable: ['ServiceUnavailable', 503],
  corrupt: ['InternalError', 500],
  internal: ['InternalError', 500],
  insufficient_storage: ['InsufficientStorage', 507],
  no_such_cors_configuration: ['NoSuchCORSConfiguration', 404],
  cors_forbidden: ['AccessForbidden', 403],
  bad_request: ['BadRequest', 400],
  max_message_length_exceeded: ['MaxMessageLengthExceeded', 400],
  invalid_tag: ['InvalidTag', 400],
  invalid_storage_class: ['InvalidStorageClass', 400],
  no_such_tag_set: ['NoSuchTagSet', 404],
  invalid_policy_document: ['InvalidPolicyDocument', 400],
  malformed_post_request: ['MalformedPOSTRequest', 400],
  // Admin API codes never reach the S3 surface; if one did, it would be our fault.
  unauthorized: ['InternalError', 500],
  invalid_credentials: ['InternalError', 500],
  forbidden: ['InternalError', 500],
  user_not_found: ['InternalError', 500],
  user_exists: ['InternalError', 500],
  invalid_username: ['InternalError', 500],
  no_s3_credentials: ['InternalError', 500],
  invalid_data: ['InternalError', 500],
  too_many_requests: ['InternalError', 500],
  admin_disabled: ['InternalError', 500],
}

const ADMIN_ONLY = new Set<ErrorCode>([
  'unauthorized',
  'invalid_credentials',
  'forbidden',
  'user_not_found',
  'user_exists',
  'invalid_username',
  'no_s3_credentials',
  'invalid_data',
  'too_many_requests',
  'admin_disabled',
])

const SERVER_SIDE = new Set<ErrorCode>([
  'busy',
  'timeout',
  'unavailable',
  'corrupt',
  'internal',
  'insufficient_storage',
  'not_implemented',
])

const CODES = Object.keys(EXPECTED) as ErrorCode[]

test('every ErrorCode maps to the S3 code and status of the table', () => {
  assert.is(CODES.length, 62)
  for (const code of CODES) {
    const mapped = s3ErrorFor(code)
    assert.equal([mapped.s3Code, mapped.status], EXPECTED[code], code)
    assert.ok(mapped.message.length > 0, code)
  }
})

test('only server-side failures are 5xx, everything else is 4xx (or 304)', () => {
  for (const code of CODES) {
    const { status } = s3ErrorFor(code)
    const serverSide = SERVER_SIDE.has(code) || ADMIN_ONLY.has(code)
    if (serverSide) assert.ok(status >= 500 && status <= 599, code)
    else if (code === 'not_modified') assert.is(status, 304)
    else assert.ok(status >= 400 && status <= 499, code)
  }
})

test('5xx messages are fixed S3 texts that reveal no detail', () => {
  assert.is(s3ErrorFor('internal').message, 'We encountered an internal error. Please try again.')
  assert.is(s3ErrorFor('corrupt').message, 'We encountered an internal error. Please try again.')
  assert.is(s3ErrorFor('busy').message, 'Please reduce your request rate.')
  assert.is(s3ErrorFor('timeout').message, s3ErrorFor('unavailable').message)
  for (const code of SERVER_SIDE) {
    const { message } = s3ErrorFor(code)
    assert.not.match(message, /corrupt|timeout|replica|quorum|actor|stack|error:/i, code)
  }
})

test('messages follow Amazon S3 where clients or people look for them', () => {
  assert.is(s3ErrorFor('expired_request').message, 'Request has expired')
  assert.is(s3ErrorFor('no_such_key').message, 'The specified key does not exist.')
  assert.is(s3ErrorFor('no_such_bucket').message, 'The specified bucket does not exist')
  assert.is(
    s3ErrorFor('no_such_cors_configuration').message,
    'The CORS configuration does not exist',
  )
  assert.is(
    s3ErrorFor('cors_forbidden').message,
    'CORSResponse: CORS is not enabled for this bucket.',
  )
  assert.is(
    s3ErrorFor('signature_mismatch').message,
    'The request signature we calculated does not match the signature you provided. ' +
      'Check your key and signing method.',
  )
  assert.match(s3ErrorFor('checksum_mismatch').message, /checksum/)
  assert.not.equal(s3ErrorFor('checksum_mismatch').message, s3ErrorFor('bad_digest').message)
})

test.run()
