/** @module Unit tests of http/admin/errors.ts. Goal: every code the admin API can meet maps to the
 * code and HTTP status of SPEC.md's Admin error table (or, for the four outcomes that table does
 * not name, to the status the map's comment chooses), only server-side faults are 5xx, messages are
 * fixed and reveal nothing, no S3-only code gets an admin answer of its own, and the disabled admin
 * API tells the operator what to set. Method: SPEC.md's table transcribed row by row; a table typed
 * `Record<AdminSurfaceCode, ...>` (so it cannot miss a code of the admin surface, nor name an S3
 * one) compared with adminErrorFor for each code, and each of its rows found in SPEC.md's table or
 * the chosen extras. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import {
  ADMIN_CODES,
  S3_CODES,
  SHARED_CODES,
  type AdminSurfaceCode,
  type ErrorCode,
} from '../../protocol/errors.js'
import { adminErrorFor, ROUTE_NOT_FOUND } from '../../http/admin/errors.js'

/** SPEC.md section 7, Admin API: Code and Status of each row. */
const SPEC_TABLE: [code: string, status: number][] = [
  ['Unauthorized', 401],
  ['InvalidCredentials', 401],
  ['Forbidden', 403],
  ['UserNotFound', 404],
  ['UserAlreadyExists', 409],
  ['InvalidUsername', 400],
  ['NoS3Credentials', 404],
  ['NoSuchBucket', 404],
  ['BucketAlreadyExists', 409],
  ['BucketNotEmpty', 409],
  ['InvalidBucketName', 400],
  ['InvalidData', 400],
  ['InternalError', 500],
]

/** Outcomes SPEC.md's table does not name, as the admin map's comment chooses them. */
const CHOSEN: [code: string, status: number][] = [
  ['TooManyRequests', 429],
  ['ServiceUnavailable', 503],
  ['MethodNotAllowed', 405],
  ['InsufficientStorage', 507],
]

const UNAVAILABLE: [string, number] = ['ServiceUnavailable', 503]
const INTERNAL: [string, number] = ['InternalError', 500]

const EXPECTED: Record<AdminSurfaceCode, [code: string, status: number]> = {
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
  invalid_data: ['InvalidData', 400],
  corrupt: INTERNAL,
  internal: INTERNAL,
  too_many_requests: ['TooManyRequests', 429],
  busy: UNAVAILABLE,
  timeout: UNAVAILABLE,
  unavailable: UNAVAILABLE,
  method_not_allowed: ['MethodNotAllowed', 405],
  insufficient_storage: ['InsufficientStorage', 507],
}

/** What the server alone is to blame for, or a callee that may recover. */
const SERVER_SIDE = new Set<ErrorCode>([
  'busy',
  'timeout',
  'unavailable',
  'corrupt',
  'internal',
  'insufficient_storage',
])

const CODES = Object.keys(EXPECTED) as AdminSurfaceCode[]
const rowOf = ([code, status]: [string, number]): string => `${code} ${status}`

test('every code of the admin surface maps to the code and status of the table', () => {
  assert.equal(new Set(CODES), new Set<ErrorCode>([...ADMIN_CODES, ...SHARED_CODES]))
  for (const code of CODES) {
    const mapped = adminErrorFor(code)
    assert.equal([mapped.code, mapped.status], EXPECTED[code], code)
    assert.ok(mapped.message.length > 0, code)
  }
})

test("every answer is a row of SPEC.md's table or a chosen extra; every row is answered", () => {
  const allowed = new Set([...SPEC_TABLE, ...CHOSEN].map(rowOf))
  const answered = new Set(CODES.map((code) => rowOf(EXPECTED[code])))
  for (const row of answered) assert.ok(allowed.has(row), row)
  for (const row of allowed) assert.ok(answered.has(row), row)
})

test('an S3-only code reaching the admin API is a 500, never an admin code of its own', () => {
  for (const code of S3_CODES) {
    const mapped = adminErrorFor(code)
    assert.equal([mapped.code, mapped.status], INTERNAL, code)
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
