/** @module S3 error mapping: turns each ErrorCode into Amazon S3's error Code, HTTP status and
 * standard Message, once, by an exhaustive switch (a new ErrorCode does not compile until it is
 * mapped here). Codes, statuses and message texts are Amazon S3's own, so SDKs classify and retry
 * our errors exactly as they do S3's. 5xx messages are fixed texts that reveal nothing about the
 * cause; the detail of a Result stays in the logs. */
import { unreachable, type ErrorCode } from '../../protocol/errors.js'

export interface S3Error {
  /** The `<Code>` of the error body, e.g. NoSuchKey. */
  s3Code: string
  status: number
  /** Amazon S3's standard message for the code; a 4xx answer may replace it with a more precise
   * one, a 5xx answer never does. */
  message: string
}

const INTERNAL_MESSAGE = 'We encountered an internal error. Please try again.'

function s3Error(s3Code: string, status: number, message: string): S3Error {
  return { s3Code, status, message }
}

export function s3ErrorFor(code: ErrorCode): S3Error {
  switch (code) {
    case 'no_such_bucket':
    case 'no_such_key':
    case 'no_such_upload':
    case 'no_such_version':
    case 'bucket_exists':
    case 'bucket_owned_by_you':
    case 'bucket_not_empty':
    case 'invalid_bucket_name':
    case 'invalid_location_constraint':
      return resourceError(code)
    case 'access_denied':
    case 'invalid_access_key':
    case 'signature_mismatch':
    case 'request_time_skewed':
    case 'expired_request':
    case 'authorization_malformed':
    case 'content_sha256_mismatch':
      return authenticationError(code)
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
      return requestError(code)
    case 'invalid_part':
    case 'invalid_part_order':
    case 'invalid_part_number':
      return partError(code)
    case 'precondition_failed':
    case 'not_modified':
    case 'invalid_range':
    case 'not_implemented':
    case 'method_not_allowed':
    case 'busy':
    case 'timeout':
    case 'unavailable':
    case 'corrupt':
    case 'internal':
      return protocolOrServerError(code)
    case 'insufficient_storage':
      // Not one of Amazon S3's codes (its storage does not fill up): WebDAV's status (RFC 4918),
      // which SDKs do not retry, since only a delete or more space makes room.
      return s3Error(
        'InsufficientStorage',
        507,
        'The data volume is full: delete objects (or add space) before writing more.',
      )
    case 'no_such_cors_configuration':
    case 'cors_forbidden':
    case 'bad_request':
    case 'max_message_length_exceeded':
    case 'invalid_tag':
    case 'invalid_storage_class':
    case 'no_such_tag_set':
    case 'invalid_policy_document':
    case 'malformed_post_request':
      return corsOrTagError(code)
    case 'unauthorized':
    case 'invalid_credentials':
    case 'forbidden':
    case 'user_not_found':
    case 'user_exists':
    case 'invalid_username':
    case 'no_s3_credentials':
    case 'invalid_data':
    case 'too_many_requests':
    case 'admin_disabled':
      // Admin API codes: an S3 request reaching one is our bug, answered as a server fault.
      return s3Error('InternalError', 500, INTERNAL_MESSAGE)
    default:
      return unreachable(code)
  }
}

type ResourceCode = Extract<
  ErrorCode,
  | 'no_such_bucket'
  | 'no_such_key'
  | 'no_such_upload'
  | 'no_such_version'
  | 'bucket_exists'
  | 'bucket_owned_by_you'
  | 'bucket_not_empty'
  | 'invalid_bucket_name'
  | 'invalid_location_constraint'
>

function resourceError(code: ResourceCode): S3Error {
  switch (code) {
    case 'no_such_bucket':
      return s3Error('NoSuchBucket', 404, 'The specified bucket does not exist')
    case 'no_such_key':
      return s3Error('NoSuchKey', 404, 'The specified key does not exist.')
    case 'no_such_upload':
      return s3Error(
        'NoSuchUpload',
        404,
        'The specified upload does not exist. The upload ID may be invalid, or the upload may ' +
          'have been aborted or completed.',
      )
    case 'no_such_version':
      return s3Error('NoSuchVersion', 404, 'The specified version does not exist.')
    case 'bucket_exists':
      return s3Error(
        'BucketAlreadyExists',
        409,
        'The requested bucket name is not available. The bucket namespace is shared by all ' +
          'users of the system. Please select a different name and try again.',
      )
    case 'bucket_owned_by_you':
      return s3Error(
        'BucketAlreadyOwnedByYou',
        409,
        'Your previous request to create the named bucket succeeded and you already own it.',
      )
    case 'bucket_not_empty':
      return s3Error('BucketNotEmpty', 409, 'The bucket you tried to delete is not empty')
    case 'invalid_bucket_name':
      return s3Error('InvalidBucketName', 400, 'The specified bucket is not valid.')
    case 'invalid_location_constraint':
      return s3Error(
        'InvalidLocationConstraint',
        400,
        'The specified location-constraint is not valid',
      )
    default:
      return unreachable(code)
  }
}

type AuthenticationCode = Extract<
  ErrorCode,
  | 'access_denied'
  | 'invalid_access_key'
  | 'signature_mismatch'
  | 'request_time_skewed'
  | 'expired_request'
  | 'authorization_malformed'
  | 'content_sha256_mismatch'
>

function authenticationError(code: AuthenticationCode): S3Error {
  switch (code) {
    case 'access_denied':
      return s3Error('AccessDenied', 403, 'Access Denied')
    case 'invalid_access_key':
      return s3Error(
        'InvalidAccessKeyId',
        403,
        'The AWS Access Key Id you provided does not exist in our records.',
      )
    case 'signature_mismatch':
      return s3Error(
        'SignatureDoesNotMatch',
        403,
        'The request signature we calculated does not match the signature you provided. ' +
          'Check your key and signing method.',
      )
    case 'request_time_skewed':
      return s3Error(
        'RequestTimeTooSkewed',
        403,
        'The difference between the request time and the current time is too large.',
      )
    case 'expired_request':
      // S3 answers an expired presigned URL with AccessDenied, not a code of its own.
      return s3Error('AccessDenied', 403, 'Request has expired')
    case 'authorization_malformed':
      return s3Error('AuthorizationHeaderMalformed', 400, 'The authorization header is malformed.')
    case 'content_sha256_mismatch':
      return s3Error(
        'XAmzContentSHA256Mismatch',
        400,
        "The provided 'x-amz-content-sha256' header does not match what was computed.",
      )
    default:
      return unreachable(code)
  }
}

type RequestCode = Extract<
  ErrorCode,
  | 'invalid_argument'
  | 'invalid_request'
  | 'invalid_digest'
  | 'bad_digest'
  | 'checksum_mismatch'
  | 'key_too_long'
  | 'metadata_too_large'
  | 'entity_too_large'
  | 'entity_too_small'
  | 'incomplete_body'
  | 'missing_content_length'
  | 'malformed_xml'
  | 'invalid_uri'
>

function requestError(code: RequestCode): S3Error {
  switch (code) {
    case 'invalid_argument':
      return s3Error('InvalidArgument', 400, 'Invalid Argument')
    case 'invalid_request':
      return s3Error('InvalidRequest', 400, 'Invalid Request')
    case 'invalid_digest':
      return s3Error('InvalidDigest', 400, 'The Content-MD5 you specified is not valid.')
    case 'bad_digest':
      return s3Error(
        'BadDigest',
        400,
        'The Content-MD5 you specified did not match what we received.',
      )
    case 'checksum_mismatch':
      // S3 reports an x-amz-checksum-* mismatch as BadDigest too, naming the checksum instead.
      return s3Error(
        'BadDigest',
        400,
        'The checksum you specified did not match the calculated checksum.',
      )
    case 'invalid_uri':
      return s3Error('InvalidURI', 400, "Couldn't parse the specified URI.")
    case 'key_too_long':
      return s3Error('KeyTooLongError', 400, 'Your key is too long')
    case 'metadata_too_large':
      return s3Error(
        'MetadataTooLarge',
        400,
        'Your metadata headers exceed the maximum allowed metadata size.',
      )
    case 'entity_too_large':
      return s3Error(
        'EntityTooLarge',
        400,
        'Your proposed upload exceeds the maximum allowed object size.',
      )
    case 'entity_too_small':
      return s3Error(
        'EntityTooSmall',
        400,
        'Your proposed upload is smaller than the minimum allowed object size.',
      )
    default:
      return bodyError(code)
  }
}

type PartCode = Extract<ErrorCode, 'invalid_part' | 'invalid_part_order' | 'invalid_part_number'>

/** Multipart outcomes, in Amazon S3's words. */
function partError(code: PartCode): S3Error {
  switch (code) {
    case 'invalid_part':
      return s3Error(
        'InvalidPart',
        400,
        'One or more of the specified parts could not be found. The part may not have been ' +
          "uploaded, or the specified entity tag may not match the part's entity tag.",
      )
    case 'invalid_part_order':
      return s3Error(
        'InvalidPartOrder',
        400,
        'The list of parts was not in ascending order. Parts must be ordered by part number.',
      )
    case 'invalid_part_number':
      // A GET or HEAD of a part the object does not have: S3 answers 400 InvalidPart (not the
      // 416 InvalidPartNumber it documents), as conformance suites expect.
      return s3Error(
        'InvalidPart',
        400,
        'One or more of the specified parts could not be found. The part may not have been ' +
          "uploaded, or the specified entity tag may not match the part's entity tag.",
      )
    default:
      return unreachable(code)
  }
}

type BodyCode = Extract<RequestCode, 'incomplete_body' | 'missing_content_length' | 'malformed_xml'>

function bodyError(code: BodyCode): S3Error {
  switch (code) {
    case 'incomplete_body':
      return s3Error(
        'IncompleteBody',
        400,
        'You did not provide the number of bytes specified by the Content-Length HTTP header.',
      )
    case 'missing_content_length':
      return s3Error(
        'MissingContentLength',
        411,
        'You must provide the Content-Length HTTP header.',
      )
    case 'malformed_xml':
      return s3Error(
        'MalformedXML',
        400,
        'The XML you provided was not well-formed or did not validate against our ' +
          'published schema.',
      )
    default:
      return unreachable(code)
  }
}

type ProtocolOrServerCode = Extract<
  ErrorCode,
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
>

function protocolOrServerError(code: ProtocolOrServerCode): S3Error {
  switch (code) {
    case 'precondition_failed':
      return s3Error(
        'PreconditionFailed',
        412,
        'At least one of the pre-conditions you specified did not hold',
      )
    case 'not_modified':
      // A 304 carries no body; the code only names the outcome in logs.
      return s3Error('NotModified', 304, 'Not Modified')
    case 'invalid_range':
      return s3Error('InvalidRange', 416, 'The requested range is not satisfiable')
    case 'not_implemented':
      return s3Error(
        'NotImplemented',
        501,
        'A header you provided implies functionality that is not implemented.',
      )
    case 'method_not_allowed':
      return s3Error(
        'MethodNotAllowed',
        405,
        'The specified method is not allowed against this resource.',
      )
    case 'busy':
      return s3Error('SlowDown', 503, 'Please reduce your request rate.')
    case 'timeout':
    case 'unavailable':
      return s3Error('ServiceUnavailable', 503, 'Service is unable to handle request.')
    case 'corrupt':
    case 'internal':
      // Corruption is ours to repair from a replica; the client may simply retry.
      return s3Error('InternalError', 500, INTERNAL_MESSAGE)
    default:
      return unreachable(code)
  }
}

type CorsOrTagCode = Extract<
  ErrorCode,
  | 'no_such_cors_configuration'
  | 'cors_forbidden'
  | 'bad_request'
  | 'max_message_length_exceeded'
  | 'invalid_tag'
  | 'invalid_storage_class'
  | 'no_such_tag_set'
  | 'invalid_policy_document'
  | 'malformed_post_request'
>

/** Bucket CORS (its configuration and preflight requests), tagging and form uploads. */
function corsOrTagError(code: CorsOrTagCode): S3Error {
  switch (code) {
    case 'no_such_cors_configuration':
      return s3Error('NoSuchCORSConfiguration', 404, 'The CORS configuration does not exist')
    case 'cors_forbidden':
      // S3's code for a refused preflight; the detail says why (no configuration, no rule).
      return s3Error('AccessForbidden', 403, 'CORSResponse: CORS is not enabled for this bucket.')
    case 'bad_request':
      return s3Error('BadRequest', 400, 'Bad Request')
    case 'max_message_length_exceeded':
      return s3Error('MaxMessageLengthExceeded', 400, 'Your request was too big.')
    case 'invalid_tag':
      return s3Error('InvalidTag', 400, 'The tag provided was not a valid tag.')
    case 'invalid_storage_class':
      return s3Error('InvalidStorageClass', 400, 'The storage class you specified is not valid')
    case 'no_such_tag_set':
      return s3Error('NoSuchTagSet', 404, 'The TagSet does not exist')
    case 'invalid_policy_document':
      return s3Error(
        'InvalidPolicyDocument',
        400,
        'The content of the form does not meet the conditions specified in the policy document.',
      )
    case 'malformed_post_request':
      return s3Error(
        'MalformedPOSTRequest',
        400,
        'The body of your POST request is not well-formed multipart/form-data.',
      )
    default:
      return unreachable(code)
  }
}
