/** @module Error codes: the closed set of operating errors that cross actor boundaries. Each
 * surface (S3 XML, admin JSON, gRPC) maps them once with an exhaustive switch. Messages carry
 * these codes, never Error objects: an Error loses its fields on postMessage. */

export type ErrorCode =
  | 'no_such_bucket'
  | 'no_such_key'
  | 'no_such_upload'
  | 'no_such_version'
  | 'bucket_exists'
  | 'bucket_owned_by_you'
  | 'bucket_not_empty'
  | 'invalid_bucket_name'
  | 'invalid_location_constraint'
  | 'access_denied'
  | 'invalid_access_key'
  | 'signature_mismatch'
  | 'request_time_skewed'
  | 'expired_request'
  | 'authorization_malformed'
  | 'content_sha256_mismatch'
  | 'invalid_argument'
  | 'invalid_request'
  | 'invalid_digest'
  | 'bad_digest'
  | 'checksum_mismatch'
  | 'key_too_long'
  | 'metadata_too_large'
  | 'entity_too_large'
  | 'entity_too_small'
  | 'invalid_part'
  | 'invalid_part_order'
  | 'invalid_part_number'
  | 'incomplete_body'
  | 'missing_content_length'
  | 'malformed_xml'
  | 'invalid_uri'
  | 'precondition_failed'
  | 'not_modified'
  | 'invalid_range'
  | 'not_implemented'
  | 'method_not_allowed'
  | 'busy'
  | 'timeout'
  | 'unavailable'
  | 'corrupt'
  | 'internal'
  // The data volume has no room for a write (see runtime/data-volume.ts).
  | 'insufficient_storage'
  // Bucket CORS (S3 API).
  | 'no_such_cors_configuration'
  | 'cors_forbidden'
  | 'bad_request'
  | 'max_message_length_exceeded'
  // Object and bucket tagging (S3 API).
  | 'invalid_tag'
  // A storage class Amazon S3 does not have.
  | 'invalid_storage_class'
  | 'no_such_tag_set'
  // Browser form uploads (S3's POST Object).
  | 'invalid_policy_document'
  | 'malformed_post_request'
  // Identity and the admin API.
  | 'unauthorized'
  | 'invalid_credentials'
  | 'forbidden'
  | 'user_not_found'
  | 'user_exists'
  | 'invalid_username'
  | 'no_s3_credentials'
  | 'invalid_data'
  | 'too_many_requests'
  | 'admin_disabled'

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

export function unreachable(value: never): never {
  throw new Error(`unreachable: ${JSON.stringify(value)}`)
}
