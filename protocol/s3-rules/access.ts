/** @module Who may do what on the S3 API, decided once for every request: the IAM actions a request
 * needs (S3's names: `s3:GetObject`, `s3:ListBucket`...), and the decision over the caller's role
 * (SPEC.md section 5), the bucket's policy (bucket-policy.ts) and its canned ACL, as Amazon S3
 * combines an identity's permissions with a resource's: an explicit Deny in the policy refuses
 * whatever the role; otherwise the role's permission or the policy's Allow or the ACL's grant
 * admits. An anonymous request has no role: only a policy or an ACL admits it. Pure functions. */
import type { Role } from '../identity.js'
import { evaluatePolicy, type BucketPolicy, type PolicyRequest } from './bucket-policy.js'

/** One action the request needs, on one resource (a CopyObject needs two). */
export interface NeededAction {
  action: string
  bucket: string
  /** Null for an action on the bucket itself. */
  key: string | null
}

/** The actions no role but SuperUser holds: changing who may access a bucket or its objects, and
 * overriding governance retention. A policy may still grant them (as S3 grants them by one). */
const SUPERUSER_ACTIONS = new Set([
  's3:PutBucketPolicy',
  's3:DeleteBucketPolicy',
  's3:PutBucketAcl',
  's3:PutObjectAcl',
  's3:PutObjectVersionAcl',
  's3:BypassGovernanceRetention',
])

/** The actions a policy cannot take from a SuperUser, so that no policy locks a bucket away
 * from the people who administer it (S3 keeps them for the account's root user alike). */
const UNLOCKABLE_ACTIONS = new Set([
  's3:GetBucketPolicy',
  's3:PutBucketPolicy',
  's3:DeleteBucketPolicy',
])

/** Whether the role alone permits the action (SPEC.md: Readers list and download, Writers also
 * create, upload and delete, SuperUsers do everything). */
export function roleAllows(role: Role, action: string): boolean {
  if (role === 'SuperUser') return true
  if (SUPERUSER_ACTIONS.has(action)) return false
  if (role === 'Writer') return true
  return action.startsWith('s3:Get') || action.startsWith('s3:List')
}

/** What a bucket's canned ACL grants: `public-read` lets anyone list the bucket, and
 * `authenticated-read` every signed-in user (whose role already lets it). An object's own
 * `public-read` grants its reads (objectAclAllows). */
function bucketAclAllows(acl: string | null, action: string, anonymous: boolean): boolean {
  const reads = ['s3:ListBucket', 's3:ListBucketVersions', 's3:ListBucketMultipartUploads']
  if (!reads.includes(action)) return false
  return acl === 'public-read' || (acl === 'authenticated-read' && !anonymous)
}

/** The reads an object's `public-read` ACL grants to anyone. */
function objectAclAllows(action: string): boolean {
  return action === 's3:GetObject' || action === 's3:GetObjectVersion'
}

export interface AccessRequest {
  /** Null for an anonymous request. */
  principal: { userId: string; role: Role; username?: string } | null
  needed: readonly NeededAction[]
  policy: BucketPolicy | null
  bucketAcl: string | null
  /** Condition keys and their values (condition-context.ts builds them). */
  context: Record<string, string[]>
}

/** `deny`: refused by a statement of the policy; `object-acl`: nothing admits the request but an
 * object's own ACL might (the GET reads the object and decides); `allow` or `refuse`. */
export type AccessDecision = 'allow' | 'deny' | 'refuse' | 'object-acl'

function resourceArn(bucket: string, key: string | null): string {
  return key === null ? `arn:aws:s3:::${bucket}` : `arn:aws:s3:::${bucket}/${key}`
}

export function decideAccess(request: AccessRequest): AccessDecision {
  const { principal, policy } = request
  let decision: AccessDecision = 'allow'
  for (const needed of request.needed) {
    const said =
      policy === null
        ? 'none'
        : evaluatePolicy(policy, {
            action: needed.action,
            resource: resourceArn(needed.bucket, needed.key),
            user:
              principal === null
                ? null
                : { id: principal.userId, name: principal.username ?? null },
            context: request.context,
          } satisfies PolicyRequest)
    const superUser = principal?.role === 'SuperUser'
    if (said === 'deny' && !(superUser && UNLOCKABLE_ACTIONS.has(needed.action))) return 'deny'
    if (principal !== null && roleAllows(principal.role, needed.action)) continue
    if (said === 'allow') continue
    if (bucketAclAllows(request.bucketAcl, needed.action, principal === null)) continue
    if (needed.key !== null && objectAclAllows(needed.action)) {
      decision = 'object-acl'
      continue
    }
    return 'refuse'
  }
  return decision
}
