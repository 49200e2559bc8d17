/** @module S3 bucket operations and listings: ListBuckets, CreateBucket, HeadBucket, DeleteBucket,
 * GetBucketLocation, ListObjectsV2, ListObjects (v1) and DeleteObjects. */
import { mayBypassGovernance, mayDeleteKey } from './access.js'
import { setCreatedBucketLock, versioningChangeAllowed } from './object-lock.js'
import { setCreatedBucketAcl } from './acl.js'
import { fail, ok, type ErrorCode, type Result } from '../../protocol/errors.js'
import { LIST_KEYS_MAX, XML_BODY_BYTES_MAX } from '../../protocol/limits.js'
import {
  listVersionsXml,
  parseVersioningConfiguration,
  versioningConfigurationXml,
} from './xml/s3-versioning-xml.js'
import type { BucketInfo, ListPage } from '../../protocol/objects.js'
import {
  decodeContinuationToken,
  deleteResultXml,
  listObjectsV1Xml,
  listObjectsV2Xml,
  locationConstraintXml,
  parseDeleteObjects,
  parseXmlBody,
  xmlChildText,
  type S3Owner,
} from './xml/s3-xml.js'
import type { Authenticated } from './authenticate.js'
import { readCheckedBody } from './body.js'
import { askCoordinator, send, sendError, sendXml, type S3Exchange } from './exchange.js'
import { s3ErrorFor } from './errors.js'
import { isValidBucketName } from './names.js'

const US_EAST_1 = 'us-east-1'

export function regionOf(ex: S3Exchange): string {
  return configuredRegion(ex.mesh.config)
}

/** SVC_REGION, or us-east-1: the region signatures are scoped to. */
export function configuredRegion(config: Readonly<Record<string, string | undefined>>): string {
  return config['SVC_REGION'] ?? US_EAST_1
}

export function ownerOf(ex: S3Exchange): S3Owner {
  const id = ex.principal?.userId ?? 'anonymous'
  return { id, displayName: id }
}

export async function createBucket(
  ex: S3Exchange,
  auth: Authenticated,
  bucket: string,
): Promise<void> {
  if (!isValidBucketName(bucket)) {
    return sendError(ex, 'invalid_bucket_name', 'The specified bucket is not valid.', {
      BucketName: bucket,
    })
  }
  const body = await readCheckedBody(ex, auth, XML_BODY_BYTES_MAX, 'malformed_xml')
  if (!body.ok) return sendError(ex, body.code, body.detail)
  const location = checkLocation(body.value, regionOf(ex))
  if (!location.ok) return sendError(ex, location.code, location.detail)
  // The access check refused anonymous creations already; no bucket is made without an owner.
  if (auth.principal === null) return sendError(ex, 'access_denied', 'Access Denied')
  const reply = await askCoordinator(ex, {
    kind: 'bucket.create',
    bucket,
    owner: auth.principal.userId,
  })
  // Amazon S3 in us-east-1 answers 200 to re-creating a bucket one owns (its legacy behaviour
  // there); every other region answers 409 BucketAlreadyOwnedByYou.
  const ownedHere = !reply.ok && reply.code === 'bucket_owned_by_you' && regionOf(ex) === US_EAST_1
  if (!reply.ok && !ownedHere) {
    return sendError(ex, reply.code, reply.detail, { BucketName: bucket })
  }
  const acl = await setCreatedBucketAcl(ex, bucket)
  if (!acl.ok) return sendError(ex, acl.code, acl.detail, { BucketName: bucket })
  const lock = await setCreatedBucketLock(ex, bucket)
  if (!lock.ok) return sendError(ex, lock.code, lock.detail, { BucketName: bucket })
  send(ex, 200, { location: '/' + bucket })
}

/** An optional CreateBucketConfiguration must be well-formed, and its LocationConstraint, when
 * it names one, the node's region: the node keeps its buckets in that one region. */
function checkLocation(body: Uint8Array, region: string): Result<null> {
  if (body.length === 0) return ok(null)
  const parsed = parseXmlBody(body, 'CreateBucketConfiguration')
  if (!parsed.ok) return parsed
  const location = xmlChildText(parsed.value, 'LocationConstraint')
  if (!location.ok) return location
  const named = location.value?.trim() ?? ''
  if (named === '' || named === region) return ok(null)
  return fail('invalid_location_constraint', `${named} is not this node's region ${region}`)
}

async function bucketExists(ex: S3Exchange, bucket: string): Promise<Result<BucketInfo>> {
  return askCoordinator(ex, {
    kind: 'bucket.head',
    bucket,
  })
}

export async function headBucket(ex: S3Exchange, bucket: string): Promise<void> {
  const reply = await bucketExists(ex, bucket)
  if (!reply.ok) return sendError(ex, reply.code, reply.detail, { BucketName: bucket })
  send(ex, 200, { 'x-amz-bucket-region': regionOf(ex) })
}

export async function getBucketLocation(ex: S3Exchange, bucket: string): Promise<void> {
  const reply = await bucketExists(ex, bucket)
  if (!reply.ok) return sendError(ex, reply.code, reply.detail, { BucketName: bucket })
  sendXml(ex, 200, locationConstraintXml(regionOf(ex)))
}

export async function deleteBucket(ex: S3Exchange, bucket: string): Promise<void> {
  const reply = await askCoordinator(ex, {
    kind: 'bucket.delete',
    bucket,
  })
  if (!reply.ok) return sendError(ex, reply.code, reply.detail, { BucketName: bucket })
  send(ex, 204, {})
}

function parseMaxKeys(value: string | null): Result<number> {
  if (value === null) return ok(LIST_KEYS_MAX)
  if (!/^\d{1,10}$/.test(value))
    return fail('invalid_argument', 'Provided max-keys not an integer or within integer range')
  return ok(Math.min(Number(value), LIST_KEYS_MAX))
}

export function parseEncoding(value: string | null): Result<'url' | undefined> {
  if (value === null) return ok(undefined)
  if (value.toLowerCase() === 'url') return ok('url')
  return fail('invalid_argument', 'Invalid Encoding Method specified in Request')
}

/** What both list versions read from the query: page size, encoding, prefix and delimiter. */
interface ListQuery {
  maxKeys: number
  encodingType: 'url' | undefined
  prefix: string
  delimiter: string
}

function listQuery(query: URLSearchParams): Result<ListQuery> {
  const maxKeys = parseMaxKeys(query.get('max-keys'))
  if (!maxKeys.ok) return maxKeys
  const encodingType = parseEncoding(query.get('encoding-type'))
  if (!encodingType.ok) return encodingType
  return ok({
    maxKeys: maxKeys.value,
    encodingType: encodingType.value,
    prefix: query.get('prefix') ?? '',
    delimiter: query.get('delimiter') ?? '',
  })
}

async function listPage(
  ex: S3Exchange,
  bucket: string,
  list: ListQuery,
  after: string,
): Promise<Result<ListPage>> {
  return askCoordinator(ex, {
    kind: 'object.list',
    bucket,
    prefix: list.prefix,
    delimiter: list.delimiter,
    after,
    maxKeys: list.maxKeys,
  })
}

/** The later of two keys in S3's order (UTF-8 bytes), where JavaScript's `>` compares UTF-16. */
function laterKey(a: string, b: string): string {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')) >= 0 ? a : b
}

export async function listObjectsV2(ex: S3Exchange, bucket: string): Promise<void> {
  const q = ex.query
  const list = listQuery(q)
  if (!list.ok) return sendError(ex, list.code, list.detail)
  // S3 treats an empty token as none (a client's first page may send `continuation-token=`), yet
  // answers ContinuationToken whenever the request carried one.
  const sentToken = q.get('continuation-token')
  const token = sentToken || null
  let after = q.get('start-after') ?? ''
  if (token !== null) {
    const decoded = decodeContinuationToken(token)
    if (!decoded.ok) return sendError(ex, decoded.code, decoded.detail)
    after = laterKey(decoded.value, after)
  }
  const page = await listPage(ex, bucket, list.value, after)
  if (!page.ok) return sendError(ex, page.code, page.detail, { BucketName: bucket })
  const xml = listObjectsV2Xml({
    bucket,
    ...list.value,
    page: page.value,
    continuationToken: sentToken ?? undefined,
    startAfter: q.get('start-after') ?? undefined,
    fetchOwner: q.get('fetch-owner') === 'true',
    owner: ownerOf(ex),
  })
  sendXml(ex, 200, xml)
}

export async function listObjectsV1(ex: S3Exchange, bucket: string): Promise<void> {
  const list = listQuery(ex.query)
  if (!list.ok) return sendError(ex, list.code, list.detail)
  const marker = ex.query.get('marker') ?? ''
  const page = await listPage(ex, bucket, list.value, marker)
  if (!page.ok) return sendError(ex, page.code, page.detail, { BucketName: bucket })
  const xml = listObjectsV1Xml({
    bucket,
    ...list.value,
    page: page.value,
    marker,
    owner: ownerOf(ex),
  })
  sendXml(ex, 200, xml)
}

export async function deleteObjects(
  ex: S3Exchange,
  auth: Authenticated,
  bucket: string,
): Promise<void> {
  const body = await readCheckedBody(ex, auth, XML_BODY_BYTES_MAX, 'malformed_xml')
  if (!body.ok) return sendError(ex, body.code, body.detail)
  const request = parseDeleteObjects(body.value)
  if (!request.ok) return sendError(ex, request.code, request.detail)
  // Each key is its own DeleteObject for the access check, as in S3: a refused one is its error.
  const refused: { key: string; code: string; message: string }[] = []
  const objects = request.value.keys.filter((object) => {
    if (mayDeleteKey(ex, bucket, object.key, object.versionId !== undefined)) return true
    refused.push({ key: object.key, code: 'AccessDenied', message: 'Access Denied' })
    return false
  })
  const reply =
    objects.length === 0
      ? ok({ deleted: [], errors: [] })
      : await askCoordinator(ex, {
          kind: 'object.delete-many',
          bucket,
          objects,
          ...(mayBypassGovernance(ex, { bucket, key: '*' })
            ? { bypassGovernance: true as const }
            : {}),
        })
  if (!reply.ok) return sendError(ex, reply.code, reply.detail, { BucketName: bucket })
  // S3's fields: VersionId is the one asked for; a marker added carries its own id apart.
  const deleted = reply.value.deleted.map((entry) => ({
    key: entry.key,
    versionId: entry.requestedVersionId,
    deleteMarker: entry.deleteMarker,
    deleteMarkerVersionId:
      entry.deleteMarker && entry.requestedVersionId === undefined ? entry.versionId : undefined,
  }))
  const errors = [
    ...refused,
    ...reply.value.errors.map((entry) => ({ key: entry.key, ...keyError(entry) })),
  ]
  sendXml(ex, 200, deleteResultXml({ deleted, errors, quiet: request.value.quiet }))
}

/** One key's `<Error>` of a DeleteObjects answer, as sendError words a whole request's: S3's Code,
 * and the precise detail for a 4xx, S3's fixed text for a 5xx. */
function keyError(entry: { code: ErrorCode; detail: string }): { code: string; message: string } {
  const mapped = s3ErrorFor(entry.code)
  const precise = mapped.status < 500 && entry.detail !== ''
  return { code: mapped.s3Code, message: precise ? entry.detail : mapped.message }
}

export async function putBucketVersioning(
  ex: S3Exchange,
  auth: Authenticated,
  bucket: string,
): Promise<void> {
  const body = await readCheckedBody(ex, auth, XML_BODY_BYTES_MAX, 'malformed_xml')
  if (!body.ok) return sendError(ex, body.code, body.detail)
  const status = parseVersioningConfiguration(body.value)
  if (!status.ok) return sendError(ex, status.code, status.detail)
  const allowed = versioningChangeAllowed(ex, status.value)
  if (!allowed.ok) return sendError(ex, allowed.code, allowed.detail, { BucketName: bucket })
  const reply = await askCoordinator(ex, {
    kind: 'bucket.versioning.put',
    bucket,
    status: status.value,
  })
  if (!reply.ok) return sendError(ex, reply.code, reply.detail, { BucketName: bucket })
  send(ex, 200, {})
}

export async function getBucketVersioning(ex: S3Exchange, bucket: string): Promise<void> {
  const reply = await askCoordinator(ex, {
    kind: 'bucket.versioning.get',
    bucket,
  })
  if (!reply.ok) return sendError(ex, reply.code, reply.detail, { BucketName: bucket })
  sendXml(ex, 200, versioningConfigurationXml(reply.value.status))
}

export async function listObjectVersions(ex: S3Exchange, bucket: string): Promise<void> {
  const { query } = ex
  const maxKeys = parseMaxKeys(query.get('max-keys'))
  if (!maxKeys.ok) return sendError(ex, maxKeys.code, maxKeys.detail)
  const encodingType = parseEncoding(query.get('encoding-type'))
  if (!encodingType.ok) return sendError(ex, encodingType.code, encodingType.detail)
  const keyMarker = query.get('key-marker') ?? ''
  const versionIdMarker = query.get('version-id-marker') ?? ''
  if (versionIdMarker !== '' && keyMarker === '') {
    return sendError(
      ex,
      'invalid_argument',
      'A version-id marker cannot be specified without a key marker.',
    )
  }
  const options = {
    prefix: query.get('prefix') ?? '',
    delimiter: query.get('delimiter') ?? '',
    keyMarker,
    versionIdMarker,
    maxKeys: maxKeys.value,
  }
  const reply = await askCoordinator(ex, {
    kind: 'object.list-versions',
    bucket,
    ...options,
  })
  if (!reply.ok) return sendError(ex, reply.code, reply.detail, { BucketName: bucket })
  const xml = listVersionsXml({
    bucket,
    listing: reply.value,
    ...options,
    encodingType: encodingType.value,
    by: ownerOf(ex),
  })
  sendXml(ex, 200, xml)
}
