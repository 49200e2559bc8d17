/** @module The S3 front end's access check, made once per request after authentication
 * (protocol/s3-rules/access.ts decides): the actions the operation needs, the condition keys of the
 * request, and the bucket's policy and canned ACL. Those two are read through a cache per ingress
 * thread (with its quota, quota.ts) that keeps an answer ACCESS_RULES_TTL_MS, so a request costs no
 * call for them while its bucket is busy; a change made on this thread drops its entry at once, one
 * made elsewhere (another thread, another node) holds within the TTL, as Amazon S3's policy changes
 * take a while to spread too. A bucket's rules that cannot be read refuse the request (503), never
 * admit it. */
import type { BucketQuota } from '../../protocol/bucket-settings.js'
import type { ObjectLockConfiguration } from '../../protocol/s3-rules/object-lock.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import type { Principal } from '../../protocol/messages.js'
import {
  decideAccess,
  roleAllows,
  type AccessDecision,
  type NeededAction,
} from '../../protocol/s3-rules/access.js'
import { parseBucketPolicy, type BucketPolicy } from '../../protocol/s3-rules/bucket-policy.js'
import { parseCopySource } from '../../protocol/s3-rules/copy-source.js'
import { clientAddress } from '../client-address.js'
import { mayAccess } from './authenticate.js'
import { getBucketSetting } from './bucket-setting-calls.js'
import { askCoordinator, requestedVersion, type S3Exchange } from './exchange.js'
import type { S3Operation } from './operation.js'

/** How long a thread trusts what it read of a bucket's policy and ACL. */
export const ACCESS_RULES_TTL_MS = 1000
/** Buckets whose rules a thread keeps at once; the oldest entry goes first. */
const CACHED_BUCKETS_MAX = 1024

/** What a request's access depends on of its bucket: read together, kept together. */
interface AccessRules {
  policy: BucketPolicy | null
  /** The policy names s3:ExistingObjectTag keys, so an object's tags must be read. */
  readsTags: boolean
  acl: string | null
  /** The bucket's bounds, which writes answer to (quota.ts). */
  quota: BucketQuota | null
  /** The bucket's object lock (object-lock.ts). */
  objectLock: ObjectLockConfiguration | null
}

interface CacheEntry {
  readMs: number
  rules: Promise<Result<AccessRules>>
}

const cache = new Map<string, CacheEntry>()

/** Drops what this thread read of a bucket's rules (after it changed them, or deleted it). */
export function forgetAccessRules(bucket: string): void {
  cache.delete(bucket)
}

async function readRules(ex: S3Exchange, bucket: string): Promise<Result<AccessRules>> {
  const [policy, acl, quota, objectLock] = await Promise.all([
    getBucketSetting(ex, bucket, 'policy'),
    getBucketSetting(ex, bucket, 'acl'),
    getBucketSetting(ex, bucket, 'quota'),
    getBucketSetting(ex, bucket, 'objectLock'),
  ])
  const absent = (reply: Result<unknown>, code: string): boolean =>
    !reply.ok && (reply.code === code || reply.code === 'no_such_bucket')
  if (!policy.ok && !absent(policy, 'no_such_bucket_policy')) return policy
  if (!acl.ok && !absent(acl, 'no_such_key')) return acl
  if (!quota.ok && !absent(quota, 'no_such_key')) return quota
  if (!objectLock.ok && !absent(objectLock, 'no_such_object_lock_configuration')) return objectLock
  let parsed: BucketPolicy | null = null
  if (policy.ok) {
    const read = parseBucketPolicy(policy.value.text, bucket)
    // The store checked the grammar; a policy naming another bucket's resources never applies.
    if (read.ok) parsed = read.value
  }
  return ok({
    policy: parsed,
    readsTags: policy.ok && /s3:ExistingObjectTag\//i.test(policy.value.text),
    acl: acl.ok ? acl.value.canned : null,
    quota: quota.ok ? quota.value : null,
    objectLock: objectLock.ok ? objectLock.value : null,
  })
}

function accessRules(ex: S3Exchange, bucket: string): Promise<Result<AccessRules>> {
  const nowMs = ex.mesh.now()
  const held = cache.get(bucket)
  if (held !== undefined && nowMs - held.readMs < ACCESS_RULES_TTL_MS) return held.rules
  cache.delete(bucket)
  if (cache.size >= CACHED_BUCKETS_MAX) {
    const oldest = cache.keys().next().value
    if (oldest !== undefined) cache.delete(oldest)
  }
  const rules = readRules(ex, bucket)
  cache.set(bucket, { readMs: nowMs, rules })
  // A failed read is not kept: the next request asks again.
  void rules.then((read) => {
    if (!read.ok && cache.get(bucket)?.rules === rules) cache.delete(bucket)
  })
  return rules
}

type ObjectAction = readonly [current: string, version: string]

/** Each operation's action on its object; the second when the request names a versionId. */
const OBJECT_ACTIONS: Partial<Record<S3Operation, ObjectAction>> = {
  GetObject: ['s3:GetObject', 's3:GetObjectVersion'],
  HeadObject: ['s3:GetObject', 's3:GetObjectVersion'],
  GetObjectAttributes: ['s3:GetObjectAttributes', 's3:GetObjectVersionAttributes'],
  PutObject: ['s3:PutObject', 's3:PutObject'],
  CopyObject: ['s3:PutObject', 's3:PutObject'],
  PostObject: ['s3:PutObject', 's3:PutObject'],
  DeleteObject: ['s3:DeleteObject', 's3:DeleteObjectVersion'],
  CreateMultipartUpload: ['s3:PutObject', 's3:PutObject'],
  UploadPart: ['s3:PutObject', 's3:PutObject'],
  UploadPartCopy: ['s3:PutObject', 's3:PutObject'],
  CompleteMultipartUpload: ['s3:PutObject', 's3:PutObject'],
  AbortMultipartUpload: ['s3:AbortMultipartUpload', 's3:AbortMultipartUpload'],
  ListParts: ['s3:ListMultipartUploadParts', 's3:ListMultipartUploadParts'],
  GetObjectTagging: ['s3:GetObjectTagging', 's3:GetObjectVersionTagging'],
  PutObjectTagging: ['s3:PutObjectTagging', 's3:PutObjectVersionTagging'],
  DeleteObjectTagging: ['s3:DeleteObjectTagging', 's3:DeleteObjectVersionTagging'],
  GetObjectAcl: ['s3:GetObjectAcl', 's3:GetObjectVersionAcl'],
  PutObjectAcl: ['s3:PutObjectAcl', 's3:PutObjectVersionAcl'],
  GetObjectRetention: ['s3:GetObjectRetention', 's3:GetObjectRetention'],
  PutObjectRetention: ['s3:PutObjectRetention', 's3:PutObjectRetention'],
  GetObjectLegalHold: ['s3:GetObjectLegalHold', 's3:GetObjectLegalHold'],
  PutObjectLegalHold: ['s3:PutObjectLegalHold', 's3:PutObjectLegalHold'],
}

/** Each bucket operation's action (S3 names deletes of a setting by its put). DeleteObjects has
 * none of its own: each key it names is checked as a DeleteObject (mayDeleteKey). */
const BUCKET_ACTIONS: Partial<Record<S3Operation, string>> = {
  HeadBucket: 's3:ListBucket',
  ListObjects: 's3:ListBucket',
  ListObjectsV2: 's3:ListBucket',
  ListObjectVersions: 's3:ListBucketVersions',
  ListMultipartUploads: 's3:ListBucketMultipartUploads',
  DeleteBucket: 's3:DeleteBucket',
  GetBucketLocation: 's3:GetBucketLocation',
  PutBucketCors: 's3:PutBucketCORS',
  GetBucketCors: 's3:GetBucketCORS',
  DeleteBucketCors: 's3:PutBucketCORS',
  PutBucketVersioning: 's3:PutBucketVersioning',
  GetBucketVersioning: 's3:GetBucketVersioning',
  PutBucketTagging: 's3:PutBucketTagging',
  GetBucketTagging: 's3:GetBucketTagging',
  DeleteBucketTagging: 's3:PutBucketTagging',
  PutBucketPolicy: 's3:PutBucketPolicy',
  GetBucketPolicy: 's3:GetBucketPolicy',
  DeleteBucketPolicy: 's3:DeleteBucketPolicy',
  GetBucketPolicyStatus: 's3:GetBucketPolicyStatus',
  PutBucketAcl: 's3:PutBucketAcl',
  GetBucketAcl: 's3:GetBucketAcl',
  PutObjectLockConfiguration: 's3:PutBucketObjectLockConfiguration',
  PutBucketLifecycleConfiguration: 's3:PutLifecycleConfiguration',
  GetBucketLifecycleConfiguration: 's3:GetLifecycleConfiguration',
  DeleteBucketLifecycle: 's3:PutLifecycleConfiguration',
  GetObjectLockConfiguration: 's3:GetBucketObjectLockConfiguration',
}

/** Operations outside any bucket's policy: IAM alone decides them in S3, the role here. */
const ACCOUNT_ACTIONS: Partial<Record<S3Operation, string>> = {
  ListBuckets: 's3:ListAllMyBuckets',
  CreateBucket: 's3:CreateBucket',
}

/** A canned ACL other than private on a write also needs the right to set ACLs, as in S3. */
function grantsAcl(headers: Record<string, string>): boolean {
  const acl = headers['x-amz-acl']
  return acl !== undefined && acl !== 'private' && acl !== 'bucket-owner-full-control'
}

function neededActions(ex: S3Exchange, operation: S3Operation): NeededAction[] {
  const { bucket, key } = ex.target
  if (bucket === null) return []
  if (key === null) {
    const action = BUCKET_ACTIONS[operation]
    return action === undefined ? [] : [{ action, bucket, key: null }]
  }
  const actions = OBJECT_ACTIONS[operation]
  if (actions === undefined) return []
  const versioned = ex.query.has('versionId')
  const needed: NeededAction[] = [{ action: actions[versioned ? 1 : 0], bucket, key }]
  if (grantsAcl(ex.headers) && operation !== 'PutObjectAcl') {
    needed.push({ action: 's3:PutObjectAcl', bucket, key })
  }
  return needed
}

/** The condition keys a request has (IAM's global keys and S3's), as bucket-policy.ts reads
 * them. The TLS of the hop to this node is aws:SecureTransport: behind a gateway, the gateway's. */
function conditionContext(ex: S3Exchange, principal: Principal | null): Record<string, string[]> {
  const context: Record<string, string[]> = {
    'aws:SecureTransport': [String('encrypted' in ex.incoming.socket)],
    'aws:CurrentTime': [new Date(ex.mesh.now()).toISOString()],
    'aws:EpochTime': [String(Math.floor(ex.mesh.now() / 1000))],
    's3:authType': [authTypeOf(ex, principal)],
  }
  const add = (name: string, value: string | null | undefined): void => {
    if (value !== null && value !== undefined) context[name] = [value]
  }
  add('aws:SourceIp', clientAddress(ex.incoming)?.replace(/^::ffff:/, ''))
  add('aws:Referer', ex.headers['referer'])
  add('aws:UserAgent', ex.headers['user-agent'])
  add('aws:userid', principal?.userId)
  add('aws:username', principal?.username)
  add('s3:x-amz-acl', ex.headers['x-amz-acl'])
  add('s3:x-amz-content-sha256', ex.headers['x-amz-content-sha256'])
  add('s3:VersionId', ex.query.get('versionId'))
  if (ex.target.key === null) {
    add('s3:prefix', ex.query.get('prefix'))
    add('s3:delimiter', ex.query.get('delimiter'))
    add('s3:max-keys', ex.query.get('max-keys'))
  }
  return context
}

function authTypeOf(ex: S3Exchange, principal: Principal | null): string {
  if (principal === null) return 'Anonymous'
  if (ex.headers['authorization'] !== undefined) return 'REST-HEADER'
  return ex.query.has('X-Amz-Signature') || ex.query.has('Signature') ? 'REST-QUERY-STRING' : ''
}

/** s3:ExistingObjectTag/<key> of each tag the object (or the named version) has. */
async function existingTags(ex: S3Exchange, bucket: string, key: string): Promise<void> {
  const version = requestedVersion(ex, { bucket, key })
  const reply = await askCoordinator(ex, { kind: 'object.attributes.get', ...version })
  if (!reply.ok) return
  for (const tag of reply.value.attributes.tags ?? []) {
    contextOf(ex)[`s3:ExistingObjectTag/${tag.key}`] = [tag.value]
  }
}

/** What a handler may ask of the access check after it: the rules and the context it used. */
export interface AccessState {
  principal: Principal | null
  rules: AccessRules | null
  /** The condition keys, made when a policy first needs them (most buckets have none). */
  context: Record<string, string[]> | null
  /** `object-acl`: only the object's own ACL can admit the request (a GET decides on it). */
  decision: AccessDecision
  /** Whether the requester may list the bucket: S3 answers a missing key with 404 only to those
   * who may, and with 403 AccessDenied to the others, who would learn what the bucket holds. */
  mayList: boolean
}

const NO_CONTEXT: Readonly<Record<string, string[]>> = Object.freeze({})

/** The request's condition keys, made once. */
function contextOf(ex: S3Exchange): Record<string, string[]> {
  ex.access.context ??= conditionContext(ex, ex.access.principal)
  return ex.access.context
}

/** What a decision under `policy` reads of the request: nothing without a policy. */
function contextFor(ex: S3Exchange, policy: BucketPolicy | null): Record<string, string[]> {
  return policy === null ? NO_CONTEXT : contextOf(ex)
}

/** Checks the request; AccessDenied names no reason, as S3's does not. */
export async function checkAccess(
  ex: S3Exchange,
  principal: Principal | null,
  operation: S3Operation,
  write: boolean,
): Promise<Result<null>> {
  const { bucket, key } = ex.target
  ex.access = {
    principal,
    rules: null,
    context: null,
    decision: 'refuse',
    mayList: principal !== null,
  }
  const account = ACCOUNT_ACTIONS[operation]
  if (bucket === null || account !== undefined) {
    // A request outside any bucket, or one no bucket's policy governs: the role decides, and a
    // new bucket's public ACL needs the right to set ACLs, as S3's CreateBucket does.
    const aclAllowed =
      principal !== null &&
      (!grantsAcl(ex.headers) || roleAllows(principal.role, 's3:PutBucketAcl'))
    ex.access.decision = principal === null || !aclAllowed ? 'refuse' : 'allow'
    return aclAllowed ? mayAccess(principal, write) : denied()
  }
  const rules = await accessRules(ex, bucket)
  if (!rules.ok) return rules
  ex.access.rules = rules.value
  if (rules.value.readsTags && key !== null) await existingTags(ex, bucket, key)
  const context = contextFor(ex, rules.value.policy)
  const needed = neededActions(ex, operation)
  const decision = decideAccess({
    principal,
    needed,
    policy: rules.value.policy,
    bucketAcl: rules.value.acl,
    context,
  })
  ex.access.decision = decision
  if (principal === null) {
    const listing = { action: 's3:ListBucket', bucket, key: null }
    const { policy, acl } = rules.value
    ex.access.mayList =
      decideAccess({ principal, needed: [listing], policy, bucketAcl: acl, context }) === 'allow'
  }
  if (needed.length === 0) {
    // DeleteObjects checks each key (mayDeleteKey), for anyone a policy may admit; other
    // operations without an action are refused by the router.
    if (principal === null) return rules.value.policy === null ? denied() : ok(null)
    return mayAccess(principal, write)
  }
  if (decision !== 'allow' && decision !== 'object-acl') return denied()
  return copySourceAccess(ex, principal, operation)
}

/** A copy also reads its source, which its own bucket's rules govern. */
async function copySourceAccess(
  ex: S3Exchange,
  principal: Principal | null,
  operation: S3Operation,
): Promise<Result<null>> {
  const header = ex.headers['x-amz-copy-source']
  if ((operation !== 'CopyObject' && operation !== 'UploadPartCopy') || header === undefined) {
    return ok(null)
  }
  // A malformed source is the operation's to refuse.
  const source = parseCopySource(header)
  if (!source.ok) return ok(null)
  const { bucket, key, versionId } = source.value
  const rules = await accessRules(ex, bucket)
  if (!rules.ok) return rules
  const decision = decideAccess({
    principal,
    needed: [
      { action: versionId === undefined ? 's3:GetObject' : 's3:GetObjectVersion', bucket, key },
    ],
    policy: rules.value.policy,
    bucketAcl: rules.value.acl,
    context: contextFor(ex, rules.value.policy),
  })
  // An object's own public-read ACL does not admit a copy of it here: the copy does not read it.
  return decision === 'allow' ? ok(null) : denied()
}

/** For a read only an object's ACL can admit: whether the object (or the named version) grants it.
 * A missing object answers AccessDenied as well, so that no one learns what a bucket holds from
 * its refusals. */
export async function objectAclAdmits(
  ex: S3Exchange,
  at: { bucket: string; key: string },
): Promise<boolean> {
  const version = requestedVersion(ex, at)
  const reply = await askCoordinator(ex, { kind: 'object.attributes.get', ...version })
  if (!reply.ok) return false
  const acl = reply.value.attributes.acl
  return acl === 'public-read' || (acl === 'authenticated-read' && ex.access.principal !== null)
}

/** Whether a request asks to bypass governance retention (`x-amz-bypass-governance-retention:
 * true`) and may: a SuperUser, or whom the bucket's policy grants s3:BypassGovernanceRetention. */
export function mayBypassGovernance(ex: S3Exchange, at: { bucket: string; key: string }): boolean {
  if (ex.headers['x-amz-bypass-governance-retention']?.toLowerCase() !== 'true') return false
  const { principal, rules } = ex.access
  const needed = [{ action: 's3:BypassGovernanceRetention', ...at }]
  const policy = rules?.policy ?? null
  const bucketAcl = rules?.acl ?? null
  const context = contextFor(ex, policy)
  return decideAccess({ principal, needed, policy, bucketAcl, context }) === 'allow'
}

/** Whether the requester may delete one key of a DeleteObjects request. */
export function mayDeleteKey(ex: S3Exchange, bucket: string, key: string, versioned: boolean) {
  const { principal, rules } = ex.access
  const action = versioned ? 's3:DeleteObjectVersion' : 's3:DeleteObject'
  const policy = rules?.policy ?? null
  return (
    decideAccess({
      principal,
      needed: [{ action, bucket, key }],
      policy,
      bucketAcl: rules?.acl ?? null,
      context: contextFor(ex, policy),
    }) === 'allow'
  )
}

function denied(): Result<never> {
  return fail('access_denied', 'Access Denied')
}
