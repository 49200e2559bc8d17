/** @module S3 error mapping: each code the S3 API can meet (S3SurfaceCode) to Amazon S3's error
 * Code, HTTP status and standard Message, once, by an exhaustive table (a new code of that set does
 * not compile until it is mapped here). Codes, statuses and message texts are Amazon S3's own, so
 * SDKs classify and retry our errors exactly as they do S3's. 5xx messages are fixed texts that
 * reveal nothing about the cause; the detail of a Result stays in the logs. */
import { isS3SurfaceCode, type ErrorCode, type S3SurfaceCode } from '../../protocol/errors.js'

export interface S3Error {
  /** The `<Code>` of the error body, e.g. NoSuchKey. */
  s3Code: string
  status: number
  /** Amazon S3's standard message for the code; a 4xx answer may replace it with a more precise
   * one, a 5xx answer never does. */
  message: string
}

const INTERNAL_ERROR: S3Error = {
  s3Code: 'InternalError',
  status: 500,
  message: 'We encountered an internal error. Please try again.',
}
const SERVICE_UNAVAILABLE: S3Error = {
  s3Code: 'ServiceUnavailable',
  status: 503,
  message: 'Service is unable to handle request.',
}
const INVALID_PART: S3Error = {
  s3Code: 'InvalidPart',
  status: 400,
  message:
    'One or more of the specified parts could not be found. The part may not have been ' +
    "uploaded, or the specified entity tag may not match the part's entity tag.",
}

function s3Error(s3Code: string, status: number, message: string): S3Error {
  return { s3Code, status, message }
}

const S3_ERRORS: Readonly<Record<S3SurfaceCode, S3Error>> = {
  // Buckets, objects, versions and uploads.
  no_such_bucket: s3Error('NoSuchBucket', 404, 'The specified bucket does not exist'),
  no_such_key: s3Error('NoSuchKey', 404, 'The specified key does not exist.'),
  no_such_upload: s3Error(
    'NoSuchUpload',
    404,
    'The specified upload does not exist. The upload ID may be invalid, or the upload may ' +
      'have been aborted or completed.',
  ),
  no_such_version: s3Error('NoSuchVersion', 404, 'The specified version does not exist.'),
  bucket_exists: s3Error(
    'BucketAlreadyExists',
    409,
    'The requested bucket name is not available. The bucket namespace is shared by all ' +
      'users of the system. Please select a different name and try again.',
  ),
  bucket_owned_by_you: s3Error(
    'BucketAlreadyOwnedByYou',
    409,
    'Your previous request to create the named bucket succeeded and you already own it.',
  ),
  bucket_not_empty: s3Error('BucketNotEmpty', 409, 'The bucket you tried to delete is not empty'),
  invalid_bucket_name: s3Error('InvalidBucketName', 400, 'The specified bucket is not valid.'),
  invalid_location_constraint: s3Error(
    'InvalidLocationConstraint',
    400,
    'The specified location-constraint is not valid',
  ),
  // Authentication.
  access_denied: s3Error('AccessDenied', 403, 'Access Denied'),
  invalid_access_key: s3Error(
    'InvalidAccessKeyId',
    403,
    'The AWS Access Key Id you provided does not exist in our records.',
  ),
  signature_mismatch: s3Error(
    'SignatureDoesNotMatch',
    403,
    'The request signature we calculated does not match the signature you provided. ' +
      'Check your key and signing method.',
  ),
  request_time_skewed: s3Error(
    'RequestTimeTooSkewed',
    403,
    'The difference between the request time and the current time is too large.',
  ),
  // S3 answers an expired presigned URL with AccessDenied, not a code of its own.
  expired_request: s3Error('AccessDenied', 403, 'Request has expired'),
  authorization_malformed: s3Error(
    'AuthorizationHeaderMalformed',
    400,
    'The authorization header is malformed.',
  ),
  content_sha256_mismatch: s3Error(
    'XAmzContentSHA256Mismatch',
    400,
    "The provided 'x-amz-content-sha256' header does not match what was computed.",
  ),
  // The request, its headers and its body.
  invalid_argument: s3Error('InvalidArgument', 400, 'Invalid Argument'),
  invalid_request: s3Error('InvalidRequest', 400, 'Invalid Request'),
  invalid_digest: s3Error('InvalidDigest', 400, 'The Content-MD5 you specified is not valid.'),
  bad_digest: s3Error(
    'BadDigest',
    400,
    'The Content-MD5 you specified did not match what we received.',
  ),
  // S3 reports an x-amz-checksum-* mismatch as BadDigest too, naming the checksum instead.
  checksum_mismatch: s3Error(
    'BadDigest',
    400,
    'The checksum you specified did not match the calculated checksum.',
  ),
  invalid_uri: s3Error('InvalidURI', 400, "Couldn't parse the specified URI."),
  key_too_long: s3Error('KeyTooLongError', 400, 'Your key is too long'),
  metadata_too_large: s3Error(
    'MetadataTooLarge',
    400,
    'Your metadata headers exceed the maximum allowed metadata size.',
  ),
  entity_too_large: s3Error(
    'EntityTooLarge',
    400,
    'Your proposed upload exceeds the maximum allowed object size.',
  ),
  entity_too_small: s3Error(
    'EntityTooSmall',
    400,
    'Your proposed upload is smaller than the minimum allowed object size.',
  ),
  incomplete_body: s3Error(
    'IncompleteBody',
    400,
    'You did not provide the number of bytes specified by the Content-Length HTTP header.',
  ),
  missing_content_length: s3Error(
    'MissingContentLength',
    411,
    'You must provide the Content-Length HTTP header.',
  ),
  malformed_xml: s3Error(
    'MalformedXML',
    400,
    'The XML you provided was not well-formed or did not validate against our published schema.',
  ),
  // Multipart.
  invalid_part: INVALID_PART,
  invalid_part_order: s3Error(
    'InvalidPartOrder',
    400,
    'The list of parts was not in ascending order. Parts must be ordered by part number.',
  ),
  // A GET or HEAD of a part the object does not have: S3 answers 400 InvalidPart (not the 416
  // InvalidPartNumber it documents), as conformance suites expect.
  invalid_part_number: INVALID_PART,
  // HTTP semantics.
  precondition_failed: s3Error(
    'PreconditionFailed',
    412,
    'At least one of the pre-conditions you specified did not hold',
  ),
  // A 304 carries no body; the code only names the outcome in logs.
  not_modified: s3Error('NotModified', 304, 'Not Modified'),
  invalid_range: s3Error('InvalidRange', 416, 'The requested range is not satisfiable'),
  not_implemented: s3Error(
    'NotImplemented',
    501,
    'A header you provided implies functionality that is not implemented.',
  ),
  method_not_allowed: s3Error(
    'MethodNotAllowed',
    405,
    'The specified method is not allowed against this resource.',
  ),
  // Bucket CORS (its configuration and preflight requests), tagging and form uploads.
  no_such_cors_configuration: s3Error(
    'NoSuchCORSConfiguration',
    404,
    'The CORS configuration does not exist',
  ),
  // S3's code for a refused preflight; the detail says why (no configuration, no rule).
  cors_forbidden: s3Error(
    'AccessForbidden',
    403,
    'CORSResponse: CORS is not enabled for this bucket.',
  ),
  bad_request: s3Error('BadRequest', 400, 'Bad Request'),
  max_message_length_exceeded: s3Error(
    'MaxMessageLengthExceeded',
    400,
    'Your request was too big.',
  ),
  invalid_tag: s3Error('InvalidTag', 400, 'The tag provided was not a valid tag.'),
  malformed_policy: s3Error('MalformedPolicy', 400, 'The policy is not valid.'),
  no_such_bucket_policy: s3Error('NoSuchBucketPolicy', 404, 'The bucket policy does not exist'),
  no_such_object_lock_configuration: s3Error(
    'ObjectLockConfigurationNotFoundError',
    404,
    'Object Lock configuration does not exist for this bucket',
  ),
  no_such_object_lock: s3Error(
    'NoSuchObjectLockConfiguration',
    404,
    'The specified object does not have a ObjectLock configuration',
  ),
  invalid_bucket_state: s3Error(
    'InvalidBucketState',
    409,
    'The request is not valid with the current state of the bucket.',
  ),
  no_such_lifecycle_configuration: s3Error(
    'NoSuchLifecycleConfiguration',
    404,
    'The lifecycle configuration does not exist',
  ),
  quota_exceeded: s3Error('QuotaExceeded', 403, "The bucket's quota would be exceeded."),
  malformed_acl: s3Error(
    'MalformedACLError',
    400,
    'The XML you provided was not well-formed or did not validate against our published schema',
  ),
  no_such_tag_set: s3Error('NoSuchTagSet', 404, 'The TagSet does not exist'),
  invalid_storage_class: s3Error(
    'InvalidStorageClass',
    400,
    'The storage class you specified is not valid',
  ),
  invalid_policy_document: s3Error(
    'InvalidPolicyDocument',
    400,
    'The content of the form does not meet the conditions specified in the policy document.',
  ),
  malformed_post_request: s3Error(
    'MalformedPOSTRequest',
    400,
    'The body of your POST request is not well-formed multipart/form-data.',
  ),
  // The server's own state: SDKs retry SlowDown and ServiceUnavailable.
  busy: s3Error('SlowDown', 503, 'Please reduce your request rate.'),
  timeout: SERVICE_UNAVAILABLE,
  unavailable: SERVICE_UNAVAILABLE,
  // Corruption is ours to repair from a replica; the client may simply retry.
  corrupt: INTERNAL_ERROR,
  internal: INTERNAL_ERROR,
  // Not one of Amazon S3's codes (its storage does not fill up): WebDAV's status (RFC 4918), which
  // SDKs do not retry, since only a delete or more space makes room.
  insufficient_storage: s3Error(
    'InsufficientStorage',
    507,
    'The data volume is full: delete objects (or add space) before writing more.',
  ),
}

/** The S3 error of a code. A code only the admin API meets cannot be one an S3 request asked an
 * actor for: reaching here, it is our fault, answered as InternalError (and logged, as every 500,
 * with the code). */
export function s3ErrorFor(code: ErrorCode): S3Error {
  return isS3SurfaceCode(code) ? S3_ERRORS[code] : INTERNAL_ERROR
}
