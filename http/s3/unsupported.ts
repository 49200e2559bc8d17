/** @module Request headers (and form fields) that ask for Amazon S3 features this service does not
 * have: server-side encryption (SSE-S3, SSE-KMS, SSE-C, for the object or for a copy's source),
 * ACLs with grants or canned ones that grant writes, storage classes other than STANDARD, and
 * website redirects. Storing an object while ignoring one of them would let a client believe
 * something false (plaintext kept where encryption was asked, or an ACL granting writes dropped),
 * so every such request is refused here, in one place, before any operation runs: `400
 * InvalidArgument` for a value or a combination Amazon S3 itself refuses, else `501 NotImplemented`
 * naming the header (in the message and in S3's `<Header>` element), as S3 answers a header that
 * implies functionality it does not implement.
 *
 * The canned ACLs `private`, `public-read` and `authenticated-read` are held (acl.ts). Accepted
 * because they are true of every bucket and object here: on object writes,
 * `bucket-owner-full-control` (the bucket's owner controls every object in it); the object
 * ownership `BucketOwnerEnforced` on CreateBucket; and `x-amz-storage-class: STANDARD`, the class
 * of every object here (an unknown class is S3's `400 InvalidStorageClass`). Subresources such as
 * ?encryption and ?website are refused by the router (501) before this runs. */
import { createHash } from 'node:crypto'
import { sendError, type S3Exchange } from './exchange.js'
import type { S3Operation } from './operation.js'

export interface Refusal {
  code: 'not_implemented' | 'invalid_argument' | 'invalid_storage_class'
  detail: string
  /** The header (or form field, by its header name) refused. */
  header: string
}

const SSE = 'x-amz-server-side-encryption'
const SSE_KMS_HEADERS = [
  'x-amz-server-side-encryption-aws-kms-key-id',
  'x-amz-server-side-encryption-context',
  'x-amz-server-side-encryption-bucket-key-enabled',
]
/** Customer-key headers for the object written or read, and for the source of a copy. */
const SSE_C_PREFIXES = [
  'x-amz-server-side-encryption-customer-',
  'x-amz-copy-source-server-side-encryption-customer-',
]
const GRANTS = [
  'x-amz-grant-read',
  'x-amz-grant-write',
  'x-amz-grant-read-acp',
  'x-amz-grant-write-acp',
  'x-amz-grant-full-control',
]
const CANNED_ACLS = new Set([
  'private',
  'public-read',
  'public-read-write',
  'authenticated-read',
  'aws-exec-read',
  'bucket-owner-read',
  'bucket-owner-full-control',
  'log-delivery-write',
])
const OBJECT_OWNERSHIPS = new Set(['BucketOwnerEnforced', 'BucketOwnerPreferred', 'ObjectWriter'])
const STORAGE_CLASS = 'x-amz-storage-class'
/** Amazon S3's storage classes; every object here is STANDARD. */
const STORAGE_CLASSES = new Set([
  'STANDARD',
  'REDUCED_REDUNDANCY',
  'STANDARD_IA',
  'ONEZONE_IA',
  'INTELLIGENT_TIERING',
  'GLACIER',
  'DEEP_ARCHIVE',
  'OUTPOSTS',
  'GLACIER_IR',
  'SNOW',
  'EXPRESS_ONEZONE',
])
const WEBSITE_REDIRECT = 'x-amz-website-redirect-location'

function notImplemented(header: string, what: string): Refusal {
  return {
    code: 'not_implemented',
    header,
    detail:
      `A header you provided implies functionality that is not implemented: ` +
      `${header} (${what}).`,
  }
}

function invalid(header: string, detail: string): Refusal {
  return { code: 'invalid_argument', header, detail }
}

/** The refusal a request with these (lower-cased) headers gets, or null when it asks for nothing
 * this service lacks. */
export function refusedFeature(
  operation: S3Operation,
  headers: Readonly<Record<string, string>>,
): Refusal | null {
  return (
    encryption(headers) ??
    customerKey(headers) ??
    bucketSettings(headers) ??
    acl(operation, headers) ??
    storage(headers)
  )
}

/** The same for a browser form upload, whose ACL field is `acl` and the others named as headers. */
export function refusedFormFeature(fields: ReadonlyMap<string, string>): Refusal | null {
  const headers = Object.fromEntries(fields)
  const canned = fields.get('acl')
  if (canned !== undefined) headers['x-amz-acl'] = canned
  return refusedFeature('PostObject', headers)
}

/** Answers a refusal, the header named in S3's `<Header>` element too. */
export function sendRefusal(ex: S3Exchange, refusal: Refusal): void {
  sendError(ex, refusal.code, refusal.detail, { Header: refusal.header })
}

function encryption(headers: Readonly<Record<string, string>>): Refusal | null {
  const method = headers[SSE]
  if (method === undefined) {
    const kms = SSE_KMS_HEADERS.find((name) => headers[name] !== undefined)
    if (kms === undefined) return null
    return invalid(
      kms,
      `Server Side Encryption with AWS KMS managed key requires HTTP header ${SSE} : aws:kms`,
    )
  }
  if (!['AES256', 'aws:kms', 'aws:kms:dsse'].includes(method)) {
    return invalid(SSE, 'The encryption method specified is not supported')
  }
  if (headers[SSE_C_PREFIXES[0] + 'algorithm'] !== undefined) {
    return invalid(
      SSE,
      'Server Side Encryption with Customer provided key is incompatible with the encryption ' +
        'method specified',
    )
  }
  return notImplemented(SSE, `server-side encryption ${method}`)
}

/** SSE-C: each group of algorithm, key and key MD5 must be whole and consistent, as S3 checks. */
function customerKey(headers: Readonly<Record<string, string>>): Refusal | null {
  for (const prefix of SSE_C_PREFIXES) {
    const algorithm = headers[prefix + 'algorithm']
    const key = headers[prefix + 'key']
    const keyMd5 = headers[prefix + 'key-md5']
    if (algorithm === undefined && key === undefined && keyMd5 === undefined) continue
    const header = prefix + 'algorithm'
    const refusal = customerKeyProblem(algorithm, key, keyMd5)
    if (refusal !== null) return invalid(header, refusal)
    return notImplemented(header, 'server-side encryption with a customer-provided key')
  }
  return null
}

function customerKeyProblem(
  algorithm: string | undefined,
  key: string | undefined,
  keyMd5: string | undefined,
): string | null {
  const requests = 'Requests specifying Server Side Encryption with Customer provided keys must'
  if (algorithm !== 'AES256') return `${requests} provide a valid encryption algorithm.`
  if (key === undefined || Buffer.from(key, 'base64').length !== 32) {
    return `${requests} provide an appropriate secret key.`
  }
  if (keyMd5 === undefined)
    return `${requests} provide the client calculated MD5 of the secret key.`
  const md5 = createHash('md5').update(Buffer.from(key, 'base64')).digest('base64')
  if (md5 !== keyMd5) {
    return 'The calculated MD5 hash of the key did not match the hash that was provided.'
  }
  return null
}

/** CreateBucket's object lock (object-lock.ts enables it) and object ownership settings. */
function bucketSettings(headers: Readonly<Record<string, string>>): Refusal | null {
  const lockName = 'x-amz-bucket-object-lock-enabled'
  const lock = headers[lockName]?.toLowerCase()
  if (lock !== undefined && lock !== 'true' && lock !== 'false') {
    return invalid(lockName, `${lockName} must be true or false`)
  }
  const ownershipName = 'x-amz-object-ownership'
  const ownership = headers[ownershipName]
  if (ownership === undefined || ownership === 'BucketOwnerEnforced') return null
  if (!OBJECT_OWNERSHIPS.has(ownership)) {
    return invalid(ownershipName, `Invalid ${ownershipName} value ${ownership}`)
  }
  return notImplemented(ownershipName, `object ownership ${ownership}: ACLs are disabled`)
}

/** The canned ACLs a bucket or an object may hold (what each grants: protocol/s3-rules/access.ts);
 * `bucket-owner-full-control` on an object is true of every object here (its bucket's owner
 * controls it). The rest grant writes to everyone or name AWS's own services: refused. */
const HELD_ACLS = new Set(['private', 'public-read', 'authenticated-read'])

function acl(operation: S3Operation, headers: Readonly<Record<string, string>>): Refusal | null {
  const grant = GRANTS.find((name) => headers[name] !== undefined)
  if (grant !== undefined) return notImplemented(grant, 'access control lists with grants')
  const canned = headers['x-amz-acl']
  if (canned === undefined || HELD_ACLS.has(canned)) return null
  if (!CANNED_ACLS.has(canned)) return invalid('x-amz-acl', `Invalid canned ACL ${canned}`)
  const onBucket = operation === 'CreateBucket' || operation === 'PutBucketAcl'
  if (canned === 'bucket-owner-full-control' && !onBucket) return null
  return notImplemented('x-amz-acl', `canned ACL ${canned}`)
}

/** A storage class other than STANDARD, or a website redirect (this service hosts no websites). */
function storage(headers: Readonly<Record<string, string>>): Refusal | null {
  const storageClass = headers[STORAGE_CLASS]
  if (storageClass !== undefined && storageClass !== 'STANDARD') {
    if (!STORAGE_CLASSES.has(storageClass)) {
      return {
        code: 'invalid_storage_class',
        header: STORAGE_CLASS,
        detail: 'The storage class you specified is not valid',
      }
    }
    return notImplemented(STORAGE_CLASS, `storage class ${storageClass}; every object is STANDARD`)
  }
  if (headers[WEBSITE_REDIRECT] !== undefined) {
    return notImplemented(WEBSITE_REDIRECT, 'website redirects; no bucket is a website')
  }
  return null
}
