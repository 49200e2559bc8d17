/** @module S3 dispatch: one request → one operation, chosen by method, bucket/key and subresource
 * query parameters exactly as Amazon S3 does. A subresource the service does not implement answers
 * 501 NotImplemented, never another operation (a GET ?acl must not list the bucket). */
import { randomBytes } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Mesh } from '../../protocol/actor.js'
import { ok } from '../../protocol/errors.js'
import type { Principal } from '../../protocol/messages.js'
import { checkAccess, objectAclAdmits } from './access.js'
import { bucketAcl, objectAcl } from './acl.js'
import {
  anonymousAuth,
  authenticate,
  unsignedAuth,
  type AuthCaches,
  type Authenticated,
} from './authenticate.js'
import {
  createBucket,
  deleteBucket,
  deleteObjects,
  getBucketLocation,
  getBucketVersioning,
  listObjectVersions,
  putBucketVersioning,
  headBucket,
  listObjectsV1,
  listObjectsV2,
} from './buckets.js'
import { getObjectAttributes } from './attributes.js'
import { addCorsHeaders, bucketCors, preflight } from './cors.js'
import { headerRecord, sendError, type S3Exchange } from './exchange.js'
import { listBuckets } from './list-buckets.js'
import { isKeyTooLong } from './names.js'
import { copyObject, deleteObject, getObject, putObject } from './objects.js'
import {
  abortMultipartUpload,
  completeMultipartUpload,
  createMultipartUpload,
  listMultipartUploads,
  listParts,
  uploadPart,
} from './multipart.js'
import { operationOf } from './operation.js'
import { clientFields } from '../request-log.js'
import { bucketLifecycle } from './lifecycle.js'
import { bucketObjectLock, objectLegalHold, objectRetention } from './object-lock.js'
import { bucketPolicy, bucketPolicyStatus } from './policy.js'
import { checkQuota } from './quota.js'
import { isPostObject, postObject } from './post-object.js'
import { bucketTagging, objectTagging } from './tagging.js'
import { parseTarget } from './target.js'
import { refusedFeature, sendRefusal } from './unsupported.js'

/** Subresources of Amazon S3 this service does not implement (yet): answered 501. */
const UNIMPLEMENTED = [
  'accelerate',
  'analytics',
  'encryption',
  'intelligent-tiering',
  'inventory',
  'logging',
  'metadataTable',
  'metrics',
  'notification',
  'ownershipControls',
  'publicAccessBlock',
  'replication',
  'requestPayment',
  'restore',
  'select',
  'torrent',
  'website',
]

const WRITE_METHODS = new Set(['PUT', 'POST', 'DELETE'])

/** Request ids: a random prefix per ingress thread and a counter, unique without drawing random
 * bytes for every request (that showed in profiles of small GETs). */
const requestIdPrefix = randomBytes(5).toString('hex').toUpperCase()
let requestCount = 0

export function newRequestId(): string {
  requestCount = (requestCount + 1) % 0x100000000
  return requestIdPrefix + requestCount.toString(16).toUpperCase().padStart(8, '0')
}

export function newExchange(
  incoming: IncomingMessage,
  outgoing: ServerResponse,
  mesh: Mesh,
): S3Exchange {
  const url = incoming.url ?? '/'
  const queryAt = url.indexOf('?')
  const rawQuery = queryAt === -1 ? '' : url.slice(queryAt + 1)
  return {
    requestId: newRequestId(),
    method: incoming.method ?? 'GET',
    rawPath: queryAt === -1 ? url : url.slice(0, queryAt),
    rawQuery,
    query: new URLSearchParams(rawQuery),
    headers: headerRecord(incoming),
    incoming,
    outgoing,
    target: { bucket: null, key: null },
    mesh,
    principal: null,
    bodyConsumed: false,
    access: { principal: null, rules: null, context: null, decision: 'refuse', mayList: true },
  }
}

function byteCount(header: string | number | string[] | undefined): number {
  const count = Number(header)
  return Number.isSafeInteger(count) && count >= 0 ? count : 0
}

/** One log line and one metrics sample per request, with the request id the client got in
 * x-amz-request-id. */
function logWhenDone(ex: S3Exchange): void {
  const startedMs = ex.mesh.now()
  const client = clientFields(ex.incoming)
  ex.outgoing.once('close', () => {
    const operation = operationOf(ex.method, ex.target, ex.query, ex.headers, UNIMPLEMENTED)
    const ms = ex.mesh.now() - startedMs
    ex.mesh.observeRequest({
      operation,
      method: ex.method,
      status: ex.outgoing.statusCode,
      seconds: ms / 1000,
      requestBytes: byteCount(ex.headers['content-length']),
      responseBytes: byteCount(ex.outgoing.getHeader('content-length')),
    })
    ex.mesh.log.info(
      {
        requestId: ex.requestId,
        operation,
        method: ex.method,
        bucket: ex.target.bucket,
        key: ex.target.key,
        status: ex.outgoing.statusCode,
        complete: ex.outgoing.writableFinished,
        ms,
        user: ex.principal?.userId,
        ...client(),
      },
      's3 request',
    )
  })
}

/** `session`: the principal of a console session (http/console/), whose requests carry no
 * signature; everything after authentication is as for a signed request. */
export async function handleS3(
  incoming: IncomingMessage,
  outgoing: ServerResponse,
  mesh: Mesh,
  caches: AuthCaches,
  session?: Principal,
): Promise<void> {
  const ex = newExchange(incoming, outgoing, mesh)
  logWhenDone(ex)
  const headers = ex.headers
  const target = parseTarget(ex.rawPath, headers['host'] ?? '', mesh.config['SVC_DOMAIN'])
  if (!target.ok) return sendError(ex, target.code, target.detail)
  ex.target = target.value
  // Preflights carry no credentials (browsers send none); Origin costs one call for the rules.
  if (ex.method === 'OPTIONS') return preflight(ex)
  if (headers['origin'] !== undefined) await addCorsHeaders(ex)
  // A form upload carries its credentials in the form, not in headers.
  if (session === undefined && isPostObject(ex)) return postObject(ex, caches)
  const anonymous = session === undefined ? anonymousAuth(ex) : null
  const auth =
    session !== undefined
      ? ok(unsignedAuth(session, '', '', false))
      : anonymous !== null
        ? ok(anonymous)
        : await authenticate(ex, caches)
  if (!auth.ok) return sendError(ex, auth.code, auth.detail)
  ex.principal = auth.value.principal
  const operation = operationOf(ex.method, ex.target, ex.query, headers, UNIMPLEMENTED)
  const write = WRITE_METHODS.has(ex.method)
  const allowed = await checkAccess(ex, auth.value.principal, operation, write)
  if (!allowed.ok) return sendError(ex, allowed.code, allowed.detail)
  const quota = await checkQuota(ex, operation, ex.access.rules?.quota ?? null)
  if (!quota.ok) return sendError(ex, quota.code, quota.detail)
  const unimplemented = UNIMPLEMENTED.find((name) => ex.query.has(name))
  if (unimplemented !== undefined) {
    return sendError(ex, 'not_implemented', `The ${unimplemented} subresource is not implemented`)
  }
  const refused = refusedFeature(operation, headers)
  if (refused !== null) return sendRefusal(ex, refused)
  await dispatch(ex, auth.value)
}

async function dispatch(ex: S3Exchange, auth: Authenticated): Promise<void> {
  const { bucket, key } = ex.target
  if (bucket === null) {
    if (ex.method === 'GET') return listBuckets(ex)
    return sendError(
      ex,
      'method_not_allowed',
      'The specified method is not allowed against this resource.',
    )
  }
  if (key === null) return bucketOperation(ex, auth, bucket)
  if (ex.query.has('cors')) return sendError(ex, 'method_not_allowed', 'CORS is a bucket setting')
  if (isKeyTooLong(key)) return sendError(ex, 'key_too_long', 'Your key is too long')
  const at = { bucket, key }
  if (ex.access.decision === 'object-acl' && !(await objectAclAdmits(ex, at))) {
    return sendError(ex, 'access_denied', 'Access Denied')
  }
  if (ex.query.has('tagging')) return objectTagging(ex, auth, at)
  if (ex.query.has('acl')) return objectAcl(ex, auth, at)
  if (ex.query.has('retention')) return objectRetention(ex, auth, at)
  if (ex.query.has('legal-hold')) return objectLegalHold(ex, auth, at)
  const uploadId = ex.query.get('uploadId')
  if (uploadId !== null) return uploadOperation(ex, auth, at, uploadId)
  switch (ex.method) {
    case 'GET':
      if (ex.query.has('attributes')) return getObjectAttributes(ex, at)
      return getObject(ex, at)
    case 'HEAD':
      return getObject(ex, at)
    case 'PUT': {
      const copySource = ex.headers['x-amz-copy-source']
      if (copySource !== undefined) return copyObject(ex, at, copySource)
      return putObject(ex, auth, at)
    }
    case 'DELETE':
      return deleteObject(ex, at)
    case 'POST':
      if (ex.query.has('uploads')) return createMultipartUpload(ex, at)
      return sendError(
        ex,
        'method_not_allowed',
        'The specified method is not allowed against this resource.',
      )
    default:
      return sendError(
        ex,
        'method_not_allowed',
        'The specified method is not allowed against this resource.',
      )
  }
}

/** An object request with ?uploadId: one of the multipart operations, by method. */
function uploadOperation(
  ex: S3Exchange,
  auth: Authenticated,
  at: { bucket: string; key: string },
  uploadId: string,
): Promise<void> {
  switch (ex.method) {
    case 'GET':
      return listParts(ex, at, uploadId)
    case 'PUT':
      return uploadPart(ex, auth, at, uploadId)
    case 'POST':
      return completeMultipartUpload(ex, auth, at, uploadId)
    case 'DELETE':
      return abortMultipartUpload(ex, at, uploadId)
    default:
      return Promise.resolve(sendError(ex, 'method_not_allowed', ''))
  }
}

/** Bucket subresources and the one method each accepts; another method is 405, never a
 * different operation (a GET ?delete must not list the bucket). */
const BUCKET_SUBRESOURCE_METHODS: Record<string, readonly string[]> = {
  location: ['GET'],
  delete: ['POST'],
  uploads: ['GET'],
  versioning: ['GET', 'PUT'],
  versions: ['GET'],
}

async function bucketOperation(ex: S3Exchange, auth: Authenticated, bucket: string): Promise<void> {
  if (ex.query.has('cors')) return bucketCors(ex, auth, bucket)
  if (ex.query.has('tagging')) return bucketTagging(ex, auth, bucket)
  if (ex.query.has('policy')) return bucketPolicy(ex, auth, bucket)
  if (ex.query.has('policyStatus')) return bucketPolicyStatus(ex, bucket)
  if (ex.query.has('acl')) return bucketAcl(ex, auth, bucket)
  if (ex.query.has('object-lock')) return bucketObjectLock(ex, auth, bucket)
  if (ex.query.has('lifecycle')) return bucketLifecycle(ex, auth, bucket)
  for (const [name, methods] of Object.entries(BUCKET_SUBRESOURCE_METHODS)) {
    if (ex.query.has(name) && !methods.includes(ex.method)) {
      return sendError(ex, 'method_not_allowed', '')
    }
  }
  switch (ex.method) {
    case 'GET':
      if (ex.query.has('location')) return getBucketLocation(ex, bucket)
      if (ex.query.has('uploads')) return listMultipartUploads(ex, bucket)
      if (ex.query.has('versioning')) return getBucketVersioning(ex, bucket)
      if (ex.query.has('versions')) return listObjectVersions(ex, bucket)
      if (ex.query.get('list-type') === '2') return listObjectsV2(ex, bucket)
      if (ex.query.has('list-type')) {
        return sendError(ex, 'invalid_argument', 'Invalid list type specified')
      }
      return listObjectsV1(ex, bucket)
    case 'HEAD':
      return headBucket(ex, bucket)
    case 'PUT':
      if (ex.query.has('versioning')) return putBucketVersioning(ex, auth, bucket)
      return createBucket(ex, auth, bucket)
    case 'DELETE':
      return deleteBucket(ex, bucket)
    case 'POST':
      if (ex.query.has('delete')) return deleteObjects(ex, auth, bucket)
      return sendError(
        ex,
        'method_not_allowed',
        'The specified method is not allowed against this resource.',
      )
    default:
      return sendError(
        ex,
        'method_not_allowed',
        'The specified method is not allowed against this resource.',
      )
  }
}
