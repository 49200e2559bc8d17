/** @module Admin API error mapping: each code the admin API can meet (AdminSurfaceCode) to the
 * JSON `code` and HTTP status of SPEC.md section 7 (Admin error table), once, by an exhaustive
 * table (a new code of that set does not compile until it is mapped here). SPEC.md's table names
 * no code for four outcomes; they answer as a careful REST API does: a failed-login throttle of
 * this caller 429 TooManyRequests with Retry-After (RFC 6585); a server that is overloaded (busy),
 * slow or restarting 503 ServiceUnavailable with Retry-After, since the overload is the server's,
 * not one caller's rate; a method a path does not take 405 MethodNotAllowed; a full data volume
 * 507 InsufficientStorage (RFC 4918), which no retry cures. Only server-side faults are 5xx. Every
 * message here is a fixed text: a response never echoes a username, and 5xx texts reveal nothing
 * (the detail of a Result stays in the log). */
import { isAdminSurfaceCode, type AdminSurfaceCode, type ErrorCode } from '../../protocol/errors.js'

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

const INTERNAL_ERROR = adminError('InternalError', 500, INTERNAL_MESSAGE)
const SERVICE_UNAVAILABLE = adminError('ServiceUnavailable', 503, UNAVAILABLE_MESSAGE)
const BUCKET_EXISTS = adminError(
  'BucketAlreadyExists',
  409,
  'A bucket with this name already exists.',
)

const ADMIN_ERRORS: Readonly<Record<AdminSurfaceCode, AdminError>> = {
  // SPEC.md's Admin error table.
  unauthorized: adminError('Unauthorized', 401, 'A valid bearer token is required.'),
  // Fixed and username-free: an unknown account and a wrong password answer identically.
  invalid_credentials: adminError('InvalidCredentials', 401, 'Invalid username or password.'),
  forbidden: adminError('Forbidden', 403, 'This operation requires the SuperUser role.'),
  admin_disabled: adminError('Forbidden', 403, ADMIN_DISABLED_MESSAGE),
  user_not_found: adminError('UserNotFound', 404, 'No user has this id.'),
  user_exists: adminError('UserAlreadyExists', 409, 'A user with this name already exists.'),
  invalid_username: adminError('InvalidUsername', 400, 'The username breaks the format rules.'),
  no_s3_credentials: adminError('NoS3Credentials', 404, 'The user has no S3 credentials.'),
  no_such_bucket: adminError('NoSuchBucket', 404, 'The bucket does not exist.'),
  bucket_exists: BUCKET_EXISTS,
  bucket_owned_by_you: BUCKET_EXISTS,
  bucket_not_empty: adminError(
    'BucketNotEmpty',
    409,
    'The bucket holds objects; delete them first or use force=true.',
  ),
  invalid_bucket_name: adminError(
    'InvalidBucketName',
    400,
    'The bucket name breaks the S3 naming rules.',
  ),
  invalid_data: adminError('InvalidData', 400, 'The request could not be interpreted.'),
  corrupt: INTERNAL_ERROR,
  internal: INTERNAL_ERROR,
  // Outcomes SPEC.md's table names no code for (see the module comment).
  too_many_requests: adminError('TooManyRequests', 429, 'Too many failed logins. Try again later.'),
  busy: SERVICE_UNAVAILABLE,
  timeout: SERVICE_UNAVAILABLE,
  unavailable: SERVICE_UNAVAILABLE,
  method_not_allowed: adminError(
    'MethodNotAllowed',
    405,
    'This method is not allowed on this path.',
  ),
  insufficient_storage: adminError('InsufficientStorage', 507, INSUFFICIENT_STORAGE_MESSAGE),
}

/** The admin error of a code. A code only the S3 API meets cannot be one an admin request asked
 * an actor for: reaching here, it is our fault, answered as InternalError (and logged, as every
 * 500, with the code). */
export function adminErrorFor(code: ErrorCode): AdminError {
  return isAdminSurfaceCode(code) ? ADMIN_ERRORS[code] : INTERNAL_ERROR
}
