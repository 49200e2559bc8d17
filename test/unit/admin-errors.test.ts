/** @module Unit tests of http/admin/errors.ts. Goal: every ErrorCode maps to the code and HTTP
 * status of SPEC.md's Admin error table, only server-side faults are 5xx, messages are fixed and
 * reveal nothing, and the disabled admin API tells the operator what to set. Method: a table typed
 * `Record<ErrorCode, ...>` (so it cannot miss a code) compared with adminErrorFor for each code. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import type { ErrorCode } from '../../protocol/errors.js'
import { adminErrorFor, ROUTE_NOT_FOUND } from '../../http/admin/errors.js'

const INTERNAL: [string, number] = ['InternalError', 500]
const INVALID_DATA: [string, number] = ['InvalidData', 400]
const UNAVAILABLE: [string, number] = ['ServiceUnavailable', 503]

const EXPECTED: Record<ErrorCode, [code: string, status: number]> = {
  // The Admin error table of SPEC.md section 7.
  unauthorized: ['Unauthorized', 401],
  invalid_credentials: ['InvalidCredentials', 401],
  forbidden: ['Forbidden', 403],
  admin_disabled: ['Forbidden', 403],
  user_not_found: ['UserNotFound', 404],
  user_exists: ['UserAlreadyExists', 409],
  invalid_username: ['InvalidUsername', 400],
  no_s3_credentials: ['NoS3Credentials', 404],
  no_such_bucket: ['NoSuchBucket', 404],
  bucket_exists: ['BucketAlreadyExists', 409],
  bucket_owned_by_you: ['BucketAlreadyExists', 409],
  bucket_not_empty: ['BucketNotEmpty', 409],
  invalid_bucket_name: ['InvalidBucketName', 400],
  invalid_data: INVALID_DATA,
  too_many_requests: ['TooManyRequests', 429],
  method_not_allowed: ['MethodNotAllowed', 405],
  // Request errors: something the client sent could not be interpreted.
  invalid_argument: INVALID_DATA,
  invalid_request: INVALID_DATA,
  invalid_digest: INVALID_DATA,
  bad_digest: INVALID_DATA,
  checksum_mismatch: INVALID_DATA,
  key_too_long: INVALID_DATA,
  metadata_too_large: INVALID_DATA,
  entity_too_large: INVALID_DATA,
  entity_too_small: INVALID_DATA,
  incomplete_body: INVALID_DATA,
  missing_content_length: INVALID_DATA,
  malformed_xml: INVALID_DATA,
  invalid_uri: INVALID_DATA,
  // The callee was overloaded, slow or restarting: worth a retry.
  busy: UNAVAILABLE,
  timeout: UNAVAILABLE,
  unavailable: UNAVAILABLE,
  // Server faults, and S3-only outcomes that no admin request can produce (our bug if one did).
  corrupt: INTERNAL,
  internal: INTERNAL,
  insufficient_storage: ['InsufficientStorage', 507],
  no_such_key: INTERNAL,
  no_such_upload: INTERNAL,
  no_such_version: INTERNAL,
  invalid_part: INTERNAL,
  invalid_part_order: INTERNAL,
  invalid_part_number: INTERNAL,
  access_denied: INTERNAL,
  invalid_access_key: INTERNAL,
  signature_mismatch: INTERNAL,
  request_time_skewed: INTERNAL,
  expired_request: INTERNAL,
  authorization_malformed: INTERNAL,
  content_sha256_mismatch: INTERNAL,
  precondition_failed: INTERNAL,
  not_modified: INTERNAL,
  invalid_range: INTERNAL,
  not_implemented: INTERNAL,
  no_such_cors_configuration: INTERNAL,
  cors_forbidden: INTERNAL,
  bad_request: INTERNAL,
  max_message_length_exceeded: INTERNAL,
  invalid_location_constraint: INTERNAL,
  invalid_tag: INTERNAL,
  invalid_storage_class: INTERNAL,
  no_such_tag_set: INTERNAL,
  invalid_policy_document: INTERNAL,
  malformed_post_request: INTERNAL,
}

/** What the server alone is to blame for, or a callee that may recover. */
const SERVER_SIDE = new Set<ErrorCode>([
  'busy',
  'timeout',
  'unavailable',
  'corrupt',
  'internal',
  'insufficient_storage',
  'no_such_key',
  'no_such_upload',
  'no_such_version',
  'invalid_part',
  'invalid_part_order',
  'invalid_part_number',
  'access_denied',
  'invalid_access_key',
  'signature_mismatch',
  'request_time_skewed',
  'expired_request',
  'authorization_malformed',
  'content_sha256_mismatch',
  'precondition_failed',
  'not_modified',
  'invalid_range',
  'not_implemented',
  'no_such_cors_configuration',
  'cors_forbidden',
  'bad_request',
  'max_message_length_exceeded',
  'invalid_location_constraint',
  'invalid_tag',
  'invalid_storage_class',
  'no_such_tag_set',
  'invalid_policy_document',
  'malformed_post_request',
])

const CODES = Object.keys(EXPECTED) as ErrorCode[]

test('every ErrorCode maps to the code and status of the table', () => {
  assert.is(CODES.length, 62)
  for (const code of CODES) {
    const mapped = adminErrorFor(code)
    assert.equal([mapped.code, mapped.status], EXPECTED[code], code)
    assert.ok(mapped.message.length > 0, code)
  }
})

test('only server-side faults are 5xx, and every 5xx text is fixed and says nothing', () => {
  const texts = new Set<string>()
  for (const code of CODES) {
    const mapped = adminErrorFor(code)
    assert.is(mapped.status >= 500, SERVER_SIDE.has(code), code)
    if (mapped.status >= 500) texts.add(mapped.message)
  }
  // One text for faults, one for an unavailable callee, one for a full volume: the cause is in
  // the log, not the body.
  assert.is(texts.size, 3)
  for (const text of texts) assert.not.match(text, /[a-z]+_[a-z]+|store|iam|coordinator/i)
})

test('the disabled admin API names SVC_ROOT_PASSWORD; no message has an unfilled template', () => {
  assert.match(adminErrorFor('admin_disabled').message, 'SVC_ROOT_PASSWORD')
  for (const code of CODES) assert.not.match(adminErrorFor(code).message, /\$\{|undefined/, code)
})

test('unknown admin paths answer 404 NotFound', () => {
  assert.equal([ROUTE_NOT_FOUND.code, ROUTE_NOT_FOUND.status], ['NotFound', 404])
})

test.run()
