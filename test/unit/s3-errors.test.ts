/** @module Unit tests of the split of error codes by surface (protocol/errors.ts) and of the S3
 * map (http/s3/errors.ts). Goal: every code the S3 API can meet maps to Amazon S3's exact Code and
 * HTTP status (SPEC.md shows no S3 table: Amazon S3's own codes are the requirement), only
 * server-side failures are 5xx, 5xx messages reveal nothing, and no code of the admin API gets an
 * S3 answer of its own. Method: a table typed `Record<S3SurfaceCode, ...>` (so it cannot miss a
 * code of the S3 surface, nor name an admin one) compared with s3ErrorFor for each code; the
 * surface lists checked disjoint; type assertions that fail to compile if an admin-only code became
 * an S3-surface code; the sources outside http/ read for a quoted wire code of either surface. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  ADMIN_CODES,
  S3_CODES,
  SHARED_CODES,
  isAdminSurfaceCode,
  isErrorCode,
  isS3SurfaceCode,
  type AdminSurfaceCode,
  type ErrorCode,
  type S3SurfaceCode,
} from '../../protocol/errors.js'
import { s3ErrorFor } from '../../http/s3/errors.js'
import { adminErrorFor } from '../../http/admin/errors.js'

const EXPECTED: Record<S3SurfaceCode, [s3Code: string, status: number]> = {
  // Shared with the admin API.
  no_such_bucket: ['NoSuchBucket', 404],
  bucket_exists: ['BucketAlreadyExists', 409],
  bucket_owned_by_you: ['BucketAlreadyOwnedByYou', 409],
  bucket_not_empty: ['BucketNotEmpty', 409],
  invalid_bucket_name: ['InvalidBucketName', 400],
  method_not_allowed: ['MethodNotAllowed', 405],
  busy: ['SlowDown', 503],
  timeout: ['ServiceUnavailable', 503],
  unavailable: ['ServiceUnavailable', 503],
  corrupt: ['InternalError', 500],
  internal: ['InternalError', 500],
  insufficient_storage: ['InsufficientStorage', 507],
  // The S3 API's alone.
  no_such_key: ['NoSuchKey', 404],
  no_such_upload: ['NoSuchUpload', 404],
  no_such_version: ['NoSuchVersion', 404],
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
  no_such_cors_configuration: ['NoSuchCORSConfiguration', 404],
  cors_forbidden: ['AccessForbidden', 403],
  bad_request: ['BadRequest', 400],
  max_message_length_exceeded: ['MaxMessageLengthExceeded', 400],
  invalid_tag: ['InvalidTag', 400],
  malformed_policy: ['MalformedPolicy', 400],
  no_such_bucket_policy: ['NoSuchBucketPolicy', 404],
  malformed_acl: ['MalformedACLError', 400],
  quota_exceeded: ['QuotaExceeded', 403],
  no_such_object_lock_configuration: ['ObjectLockConfigurationNotFoundError', 404],
  no_such_object_lock: ['NoSuchObjectLockConfiguration', 404],
  invalid_bucket_state: ['InvalidBucketState', 409],
  no_such_lifecycle_configuration: ['NoSuchLifecycleConfiguration', 404],
  no_such_tag_set: ['NoSuchTagSet', 404],
  invalid_storage_class: ['InvalidStorageClass', 400],
  invalid_policy_document: ['InvalidPolicyDocument', 400],
  malformed_post_request: ['MalformedPOSTRequest', 400],
}

/** The codes of SPEC.md's Admin error table that are the admin API's alone (NoSuchBucket and the
 * other bucket codes are S3's own too). */
const ADMIN_WIRE_CODES = [
  'Unauthorized',
  'InvalidCredentials',
  'Forbidden',
  'UserNotFound',
  'UserAlreadyExists',
  'InvalidUsername',
  'NoS3Credentials',
  'InvalidData',
  'TooManyRequests',
]

const SERVER_SIDE = new Set<ErrorCode>([
  'busy',
  'timeout',
  'unavailable',
  'corrupt',
  'internal',
  'insufficient_storage',
  'not_implemented',
])

const CODES = Object.keys(EXPECTED) as S3SurfaceCode[]

// Compile-time: an admin-only code is no S3-surface code, and an S3-only code no admin one.
// @ts-expect-error user_not_found is the admin API's alone
const adminOnly: S3SurfaceCode = 'user_not_found'
// @ts-expect-error no_such_key is the S3 API's alone
const s3Only: AdminSurfaceCode = 'no_such_key'

test('the three surface lists are disjoint and make up every code', () => {
  const all = [...S3_CODES, ...ADMIN_CODES, ...SHARED_CODES]
  assert.is(new Set(all).size, all.length)
  assert.equal([S3_CODES.length, ADMIN_CODES.length, SHARED_CODES.length], [48, 10, 12])
  for (const code of all) assert.ok(isErrorCode(code), code)
  assert.not.ok(isErrorCode('NoSuchKey'))
  assert.not.ok(isErrorCode(7))
  assert.not.ok(isS3SurfaceCode(adminOnly))
  assert.not.ok(isAdminSurfaceCode(s3Only))
})

test('every code of the S3 surface maps to the S3 code and status of the table', () => {
  assert.equal(new Set(CODES), new Set<ErrorCode>([...S3_CODES, ...SHARED_CODES]))
  for (const code of CODES) {
    const mapped = s3ErrorFor(code)
    assert.equal([mapped.s3Code, mapped.status], EXPECTED[code], code)
    assert.ok(mapped.message.length > 0, code)
  }
})

test('no S3 answer carries an admin wire code; an admin-only code reaching S3 is a 500', () => {
  for (const code of CODES) assert.not.ok(ADMIN_WIRE_CODES.includes(s3ErrorFor(code).s3Code), code)
  for (const code of ADMIN_CODES) {
    assert.not.ok(isS3SurfaceCode(code), code)
    assert.equal([s3ErrorFor(code).s3Code, s3ErrorFor(code).status], ['InternalError', 500], code)
  }
})

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..')

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return sources(path)
    return name.endsWith('.ts') ? [path] : []
  })
}

test('no module outside http/ writes a wire code of either surface as a string', () => {
  const adminSurface = [...ADMIN_CODES, ...SHARED_CODES]
  const wire = new Set([
    ...CODES.map((code) => s3ErrorFor(code).s3Code),
    ...adminSurface.map((code) => adminErrorFor(code).code),
  ])
  const found: string[] = []
  for (const file of ['actors', 'protocol', 'runtime'].flatMap((dir) => sources(join(root, dir)))) {
    const source = readFileSync(file, 'utf8')
    for (const code of wire) {
      if (source.includes(`'${code}'`) || source.includes(`"${code}"`)) {
        found.push(`${file.slice(root.length + 1)}: ${code}`)
      }
    }
  }
  assert.ok(wire.size > 50, `${wire.size} wire codes`)
  assert.equal(found, [])
})

test('only server-side failures are 5xx, everything else is 4xx (or 304)', () => {
  for (const code of CODES) {
    const { status } = s3ErrorFor(code)
    if (SERVER_SIDE.has(code)) assert.ok(status >= 500 && status <= 599, code)
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
