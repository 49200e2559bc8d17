/** @module Error codes: the closed set of operating errors that cross actor boundaries, split by
 * the surface that can meet each: the S3 API alone, identity and the admin API alone, or both (the
 * buckets they share and the server's own faults). Each surface maps the codes it can meet once,
 * by an exhaustive table (http/s3/errors.ts, http/admin/errors.ts): a new code belongs to one list
 * here, and does not compile until every surface that meets it maps it. gRPC carries every code,
 * checked on receipt against this build's. Messages carry these codes, never Error objects: an
 * Error loses its fields on postMessage. No actor writes a surface's wire code (NoSuchKey,
 * UserNotFound): the maps alone do. */

/** Codes only an S3 request meets: objects, uploads, signatures, S3's request rules. Actors also
 * answer a malformed call between them with invalid_request or invalid_argument; the admin API
 * never makes one, so meeting one there is a fault of ours. */
export const S3_CODES = [
  'no_such_key',
  'no_such_upload',
  'no_such_version',
  'invalid_location_constraint',
  'access_denied',
  'invalid_access_key',
  'signature_mismatch',
  'request_time_skewed',
  'expired_request',
  'authorization_malformed',
  'content_sha256_mismatch',
  'invalid_argument',
  'invalid_request',
  'invalid_digest',
  'bad_digest',
  'checksum_mismatch',
  'key_too_long',
  'metadata_too_large',
  'entity_too_large',
  'entity_too_small',
  'invalid_part',
  'invalid_part_order',
  'invalid_part_number',
  'incomplete_body',
  'missing_content_length',
  'malformed_xml',
  'invalid_uri',
  'precondition_failed',
  'not_modified',
  'invalid_range',
  'not_implemented',
  // Bucket CORS.
  'no_such_cors_configuration',
  'cors_forbidden',
  'bad_request',
  'max_message_length_exceeded',
  // Object and bucket tagging.
  'invalid_tag',
  'no_such_tag_set',
  // Bucket policies and ACLs.
  'malformed_policy',
  'no_such_bucket_policy',
  'malformed_acl',
  // A write past its bucket's quota.
  'quota_exceeded',
  // Object lock.
  'no_such_object_lock_configuration',
  'no_such_object_lock',
  'invalid_bucket_state',
  // Lifecycle rules.
  'no_such_lifecycle_configuration',
  // A storage class Amazon S3 does not have.
  'invalid_storage_class',
  // Browser form uploads (S3's POST Object).
  'invalid_policy_document',
  'malformed_post_request',
] as const

/** Codes only identity and the admin API meet (SPEC.md section 7, Admin error table). The gossiper
 * also refuses a peer of another cluster with forbidden, on gRPC alone. */
export const ADMIN_CODES = [
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
] as const

/** Codes both surfaces meet: the buckets both manage, a method a path does not take, and the
 * server's own faults. */
export const SHARED_CODES = [
  'no_such_bucket',
  'bucket_exists',
  'bucket_owned_by_you',
  'bucket_not_empty',
  'invalid_bucket_name',
  'method_not_allowed',
  'busy',
  'timeout',
  'unavailable',
  'corrupt',
  'internal',
  // The data volume has no room for a write (see runtime/data-volume.ts).
  'insufficient_storage',
] as const

export type S3Code = (typeof S3_CODES)[number]
export type AdminCode = (typeof ADMIN_CODES)[number]
export type SharedCode = (typeof SHARED_CODES)[number]
export type ErrorCode = S3Code | AdminCode | SharedCode
/** What the S3 API can meet, and so maps. */
export type S3SurfaceCode = S3Code | SharedCode
/** What the admin API can meet, and so maps. */
export type AdminSurfaceCode = AdminCode | SharedCode

const S3_SURFACE: ReadonlySet<string> = new Set<string>([...S3_CODES, ...SHARED_CODES])
const ADMIN_SURFACE: ReadonlySet<string> = new Set<string>([...ADMIN_CODES, ...SHARED_CODES])

export function isS3SurfaceCode(code: ErrorCode): code is S3SurfaceCode {
  return S3_SURFACE.has(code)
}

export function isAdminSurfaceCode(code: ErrorCode): code is AdminSurfaceCode {
  return ADMIN_SURFACE.has(code)
}

/** A code that came from outside the process (a peer's answer) checked against this build's. */
export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && (S3_SURFACE.has(code) || ADMIN_SURFACE.has(code))
}

/** The outcome of any request between actors. `detail` is for logs and 4xx messages. */
export type Result<T> = { ok: true; value: T } | Failure

export interface Failure {
  ok: false
  code: ErrorCode
  detail: string
  /** When the caller may try again (too_many_requests, busy), in whole seconds. */
  retryAfterSecs?: number
}

export function ok<T>(value: T): Result<T> {
  return { ok: true, value }
}

export function fail<T = never>(
  code: ErrorCode,
  detail: string,
  retryAfterSecs?: number,
): Result<T> {
  return retryAfterSecs === undefined
    ? { ok: false, code, detail }
    : { ok: false, code, detail, retryAfterSecs }
}

/** Failures a client may retry unchanged: the callee was overloaded, slow or restarting. */
export function isRetryable(code: ErrorCode): boolean {
  return code === 'busy' || code === 'timeout' || code === 'unavailable'
}

/** Typed error for code paths that unwind through several frames (stream pumps, parsers); converted
 * to a Result at the actor boundary. */
export class ServiceError extends Error {
  constructor(
    readonly code: ErrorCode,
    detail: string,
  ) {
    super(detail)
    this.name = 'ServiceError'
  }
}

/** An error as a ServiceError: itself, or `internal` with its message (a programmer's or the
 * platform's error that a stream must still report as one). */
export function asServiceError(error: unknown): ServiceError {
  if (error instanceof ServiceError) return error
  return new ServiceError('internal', error instanceof Error ? error.message : String(error))
}

export function unreachable(value: never): never {
  throw new Error(`unreachable: ${JSON.stringify(value)}`)
}
