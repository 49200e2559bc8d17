/** @module Admin API error mapping: turns each ErrorCode into the JSON `code` and HTTP status of
 * SPEC.md section 7 (Admin error table), once, by an exhaustive switch (a new ErrorCode does not
 * compile until it is mapped here). Only server-side faults are 5xx; S3-only codes the admin API
 * never asks for would be our bug if one reached it, so they answer as server faults too. Every
 * message here is a fixed text: a response never echoes a username, and 5xx texts reveal nothing
 * (the detail of a Result stays in the log). */
import { unreachable, type ErrorCode } from '../../protocol/errors.js'

export interface AdminError {
  /** The stable `code` of the JSON error body, e.g. UserNotFound. */
  code: string
  status: number
  /** A fixed human-readable text; a 400 answer may replace it with what exactly to correct. */
  message: string
}

const INTERNAL_MESSAGE = 'The server encountered an internal error. Please try again.'
const UNAVAILABLE_MESSAGE = 'The service is briefly unavailable. Please try again.'
const INSUFFICIENT_STORAGE_MESSAGE =
  'The data volume is full: delete objects (or add space) before writing more.'
/** What an operator must do when no user exists yet (ARCHITECTURE.md, Identity). */
export const ADMIN_DISABLED_MESSAGE =
  'The admin API is disabled: no user exists. Start the node with SVC_ROOT_PASSWORD set, ' +
  'which creates the root SuperUser on first start.'

/** The answer to a path outside the admin API's table (no ErrorCode: routing decides it). */
export const ROUTE_NOT_FOUND: AdminError = {
  code: 'NotFound',
  status: 404,
  message: 'No admin API endpoint has this path.',
}

function adminError(code: string, status: number, message: string): AdminError {
  return { code, status, message }
}

export function adminErrorFor(code: ErrorCode): AdminError {
  switch (code) {
    case 'unauthorized':
    case 'invalid_credentials':
    case 'forbidden':
    case 'admin_disabled':
    case 'too_many_requests':
      return accessError(code)
    case 'user_not_found':
    case 'user_exists':
    case 'no_s3_credentials':
    case 'no_such_bucket':
    case 'bucket_exists':
    case 'bucket_owned_by_you':
    case 'bucket_not_empty':
      return resourceError(code)
    case 'invalid_username':
      return adminError('InvalidUsername', 400, 'The username breaks the format rules.')
    case 'invalid_bucket_name':
      return adminError('InvalidBucketName', 400, 'The bucket name breaks the S3 naming rules.')
    case 'invalid_data':
    case 'invalid_argument':
    case 'invalid_request':
    case 'invalid_digest':
    case 'bad_digest':
    case 'checksum_mismatch':
    case 'key_too_long':
    case 'metadata_too_large':
    case 'entity_too_large':
    case 'entity_too_small':
    case 'incomplete_body':
    case 'missing_content_length':
    case 'malformed_xml':
    case 'invalid_uri':
      return adminError('InvalidData', 400, 'The request could not be interpreted.')
    case 'method_not_allowed':
      return adminError('MethodNotAllowed', 405, 'This method is not allowed on this path.')
    case 'busy':
    case 'timeout':
    case 'unavailable':
      return adminError('ServiceUnavailable', 503, UNAVAILABLE_MESSAGE)
    case 'insufficient_storage':
      return adminError('InsufficientStorage', 507, INSUFFICIENT_STORAGE_MESSAGE)
    case 'corrupt':
    case 'internal':
    // S3-only outcomes: the admin API sends no request that can produce them.
    case 'no_such_key':
    case 'no_such_upload':
    case 'no_such_version':
    case 'invalid_part':
    case 'invalid_part_order':
    case 'invalid_part_number':
    case 'access_denied':
    case 'invalid_access_key':
    case 'signature_mismatch':
    case 'request_time_skewed':
    case 'expired_request':
    case 'authorization_malformed':
    case 'content_sha256_mismatch':
    case 'precondition_failed':
    case 'not_modified':
    case 'invalid_range':
    case 'not_implemented':
    case 'no_such_cors_configuration':
    case 'cors_forbidden':
    case 'bad_request':
    case 'max_message_length_exceeded':
    case 'invalid_location_constraint':
    case 'invalid_tag':
    case 'invalid_storage_class':
    case 'no_such_tag_set':
    case 'invalid_policy_document':
    case 'malformed_post_request':
      return adminError('InternalError', 500, INTERNAL_MESSAGE)
    default:
      return unreachable(code)
  }
}

type AccessCode = Extract<
  ErrorCode,
  'unauthorized' | 'invalid_credentials' | 'forbidden' | 'admin_disabled' | 'too_many_requests'
>

function accessError(code: AccessCode): AdminError {
  switch (code) {
    case 'unauthorized':
      return adminError('Unauthorized', 401, 'A valid bearer token is required.')
    case 'invalid_credentials':
      // Fixed and username-free: an unknown account and a wrong password answer identically.
      return adminError('InvalidCredentials', 401, 'Invalid username or password.')
    case 'forbidden':
      return adminError('Forbidden', 403, 'This operation requires the SuperUser role.')
    case 'admin_disabled':
      return adminError('Forbidden', 403, ADMIN_DISABLED_MESSAGE)
    case 'too_many_requests':
      return adminError('TooManyRequests', 429, 'Too many failed logins. Try again later.')
    default:
      return unreachable(code)
  }
}

type ResourceCode = Extract<
  ErrorCode,
  | 'user_not_found'
  | 'user_exists'
  | 'no_s3_credentials'
  | 'no_such_bucket'
  | 'bucket_exists'
  | 'bucket_owned_by_you'
  | 'bucket_not_empty'
>

function resourceError(code: ResourceCode): AdminError {
  switch (code) {
    case 'user_not_found':
      return adminError('UserNotFound', 404, 'No user has this id.')
    case 'user_exists':
      return adminError('UserAlreadyExists', 409, 'A user with this name already exists.')
    case 'no_s3_credentials':
      return adminError('NoS3Credentials', 404, 'The user has no S3 credentials.')
    case 'no_such_bucket':
      return adminError('NoSuchBucket', 404, 'The bucket does not exist.')
    case 'bucket_exists':
    case 'bucket_owned_by_you':
      return adminError('BucketAlreadyExists', 409, 'A bucket with this name already exists.')
    case 'bucket_not_empty':
      return adminError(
        'BucketNotEmpty',
        409,
        'The bucket holds objects; delete them first or use force=true.',
      )
    default:
      return unreachable(code)
  }
}
