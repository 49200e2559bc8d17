/** @module Bucket policies as Amazon S3 reads and applies them: the IAM policy language's grammar
 * (Version, Statement, Sid, Effect, Principal/NotPrincipal, Action/NotAction,
 * Resource/NotResource, Condition) checked with the reason of a refusal (S3's MalformedPolicy),
 * and the evaluation of one request against a policy: an explicit Deny wins, then an Allow, and
 * otherwise the policy says nothing (the caller's role decides, and an anonymous request is
 * refused). Pure functions: the S3 front end and the tests use the same ones.
 *
 * A principal is `*` (everyone, anonymous requests included) or, under `AWS`, a user of this
 * service named by its id or its name, alone or as `arn:aws:iam:::user/<name or id>`. A resource
 * is `arn:aws:s3:::<bucket>` or `arn:aws:s3:::<bucket>/<key pattern>` within the policy's own
 * bucket. Conditions take the string, numeric, date, Bool, IpAddress and Null operators, their
 * `IfExists` forms, and the `ForAnyValue:`/`ForAllValues:` set qualifiers. */
import { isIP } from 'node:net'
import { fail, ok, type Result } from '../errors.js'

/** S3's bound on a bucket policy's size. */
export const POLICY_BYTES_MAX = 20 * 1024
const VERSIONS = new Set(['2012-10-17', '2008-10-17'])
const STATEMENT_KEYS = new Set([
  'Sid',
  'Effect',
  'Principal',
  'NotPrincipal',
  'Action',
  'NotAction',
  'Resource',
  'NotResource',
  'Condition',
])

export interface PolicyStatement {
  sid: string | null
  effect: 'Allow' | 'Deny'
  /** Who it applies to: `*`, or user names and ids; `not` inverts the match (NotPrincipal). */
  principals: { not: boolean; values: string[] }
  actions: { not: boolean; values: string[] }
  resources: { not: boolean; values: string[] }
  /** operator -> condition key -> values. */
  conditions: Record<string, Record<string, string[]>>
}

export interface BucketPolicy {
  version: string
  statements: PolicyStatement[]
}

export interface PolicyRequest {
  /** `s3:GetObject`, `s3:ListBucket`... */
  action: string
  /** `arn:aws:s3:::bucket` or `arn:aws:s3:::bucket/key`. */
  resource: string
  /** Null for an anonymous request. */
  user: { id: string; name: string | null } | null
  /** Condition keys (lower-case names match case-insensitively) and their values. */
  context: Record<string, string[]>
}

export type PolicyDecision = 'allow' | 'deny' | 'none'

function malformed(reason: string): Result<never> {
  return fail('malformed_policy', reason)
}

function stringList(value: unknown, what: string): Result<string[]> {
  const list = typeof value === 'string' ? [value] : value
  if (!Array.isArray(list) || list.length === 0) return malformed(`${what} must be text or a list`)
  if (!list.every((entry) => typeof entry === 'string' && entry !== '')) {
    return malformed(`${what} must hold only non-empty text`)
  }
  return ok(list as string[])
}

function parsePrincipal(value: unknown): Result<string[]> {
  if (value === '*') return ok(['*'])
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return malformed('Invalid principal in policy')
  }
  const entries = Object.entries(value)
  if (entries.length !== 1 || entries[0]?.[0] !== 'AWS') {
    return malformed('Invalid principal in policy: only "*" and "AWS" principals are known')
  }
  const names = stringList(entries[0][1], 'Principal AWS')
  if (!names.ok) return malformed('Invalid principal in policy')
  return ok(names.value.map(userOfPrincipal))
}

/** `arn:aws:iam:::user/alice` and `alice` name the same user; `*` is everyone. */
function userOfPrincipal(name: string): string {
  const match = /^arn:aws:iam::[^:]*:user\/(.+)$/.exec(name)
  return match?.[1] ?? name
}

function either(
  statement: Record<string, unknown>,
  name: string,
  parse: (value: unknown) => Result<string[]>,
  required: boolean,
): Result<{ not: boolean; values: string[] }> {
  const positive = statement[name]
  const negative = statement[`Not${name}`]
  if (positive !== undefined && negative !== undefined) {
    return malformed(`a statement has both ${name} and Not${name}`)
  }
  if (positive === undefined && negative === undefined) {
    return required
      ? malformed(`Missing required field ${name}`)
      : ok({ not: false, values: ['*'] })
  }
  const parsed = parse(positive ?? negative)
  if (!parsed.ok) return parsed
  return ok({ not: negative !== undefined, values: parsed.value })
}

function parseActions(value: unknown): Result<string[]> {
  const actions = stringList(value, 'Action')
  if (!actions.ok) return actions
  for (const action of actions.value) {
    if (action !== '*' && !/^s3:[A-Za-z0-9*?]+$/i.test(action)) {
      return malformed(`Policy has invalid action: ${action}`)
    }
  }
  return actions
}

/** `bucket` null: a resource of any bucket (the store checks the grammar alone). */
function resourcesFor(bucket: string | null): (value: unknown) => Result<string[]> {
  return (value) => {
    const resources = stringList(value, 'Resource')
    if (!resources.ok) return resources
    for (const resource of resources.value) {
      const own = `arn:aws:s3:::${bucket ?? ''}`
      if (
        bucket === null
          ? !resource.startsWith(own)
          : resource !== own && !resource.startsWith(`${own}/`)
      ) {
        return malformed(`Policy has invalid resource: ${resource} is not in this bucket`)
      }
    }
    return resources
  }
}

const OPERATORS = new Set([
  'StringEquals',
  'StringNotEquals',
  'StringEqualsIgnoreCase',
  'StringNotEqualsIgnoreCase',
  'StringLike',
  'StringNotLike',
  'NumericEquals',
  'NumericNotEquals',
  'NumericLessThan',
  'NumericLessThanEquals',
  'NumericGreaterThan',
  'NumericGreaterThanEquals',
  'DateEquals',
  'DateNotEquals',
  'DateLessThan',
  'DateLessThanEquals',
  'DateGreaterThan',
  'DateGreaterThanEquals',
  'Bool',
  'IpAddress',
  'NotIpAddress',
  'Null',
])

/** `ForAnyValue:StringLike` -> its qualifier, its base operator and whether it is IfExists. */
function operatorParts(operator: string): {
  set: 'any' | 'all' | null
  base: string
  ifExists: boolean
} {
  let rest = operator
  let set: 'any' | 'all' | null = null
  if (rest.startsWith('ForAnyValue:')) {
    set = 'any'
    rest = rest.slice('ForAnyValue:'.length)
  } else if (rest.startsWith('ForAllValues:')) {
    set = 'all'
    rest = rest.slice('ForAllValues:'.length)
  }
  const ifExists = rest.endsWith('IfExists') && rest !== 'IfExists'
  return { set, base: ifExists ? rest.slice(0, -'IfExists'.length) : rest, ifExists }
}

function parseConditions(value: unknown): Result<Record<string, Record<string, string[]>>> {
  if (value === undefined) return ok({})
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return malformed('Condition must be an object of operators')
  }
  const conditions: Record<string, Record<string, string[]>> = {}
  for (const [operator, block] of Object.entries(value)) {
    const { base } = operatorParts(operator)
    if (!OPERATORS.has(base)) return malformed(`Invalid Condition type : ${operator}`)
    if (typeof block !== 'object' || block === null || Array.isArray(block)) {
      return malformed(`Condition ${operator} must map keys to values`)
    }
    const keys: Record<string, string[]> = {}
    for (const [key, values] of Object.entries(block)) {
      const list = (Array.isArray(values) ? values : [values]).map((entry) =>
        typeof entry === 'boolean' || typeof entry === 'number' ? String(entry) : entry,
      )
      if (list.length === 0 || !list.every((entry) => typeof entry === 'string')) {
        return malformed(`Condition ${operator} ${key} must have text, number or boolean values`)
      }
      keys[key] = list as string[]
    }
    conditions[operator] = keys
  }
  return ok(conditions)
}

function parseStatement(raw: unknown, bucket: string | null): Result<PolicyStatement> {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return malformed('each Statement must be an object')
  }
  const statement = raw as Record<string, unknown>
  const unknown = Object.keys(statement).find((key) => !STATEMENT_KEYS.has(key))
  if (unknown !== undefined) return malformed(`Unknown field ${unknown}`)
  const effect = statement['Effect']
  if (effect !== 'Allow' && effect !== 'Deny')
    return malformed('Invalid effect: must be Allow or Deny')
  const sid = statement['Sid']
  if (sid !== undefined && typeof sid !== 'string') return malformed('Sid must be text')
  const principals = either(statement, 'Principal', parsePrincipal, true)
  if (!principals.ok) return principals
  const actions = either(statement, 'Action', parseActions, true)
  if (!actions.ok) return actions
  const resources = either(statement, 'Resource', resourcesFor(bucket), true)
  if (!resources.ok) return resources
  const conditions = parseConditions(statement['Condition'])
  if (!conditions.ok) return conditions
  return ok({
    sid: sid ?? null,
    effect,
    principals: principals.value,
    actions: actions.value,
    resources: resources.value,
    conditions: conditions.value,
  })
}

/** A policy document of `bucket` (null: of whichever bucket its resources name), or
 * MalformedPolicy with the reason. */
export function parseBucketPolicy(text: string, bucket: string | null): Result<BucketPolicy> {
  if (Buffer.byteLength(text, 'utf8') > POLICY_BYTES_MAX) {
    return malformed(`Policies must be at most ${POLICY_BYTES_MAX} bytes`)
  }
  if (!text.trimStart().startsWith('{')) {
    return malformed("Policies must be valid JSON and the first byte must be '{'")
  }
  let document: unknown
  try {
    document = JSON.parse(text)
  } catch {
    return malformed("Policies must be valid JSON and the first byte must be '{'")
  }
  const root = document as Record<string, unknown>
  const unknown = Object.keys(root).find((key) => !['Version', 'Id', 'Statement'].includes(key))
  if (unknown !== undefined) return malformed(`Unknown field ${unknown}`)
  const version = root['Version'] ?? '2008-10-17'
  if (typeof version !== 'string' || !VERSIONS.has(version)) {
    return malformed('The policy must contain a valid version string')
  }
  const raw = root['Statement']
  const list = Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]
  if (list.length === 0) return malformed('Missing required field Statement')
  const statements: PolicyStatement[] = []
  for (const entry of list) {
    const statement = parseStatement(entry, bucket)
    if (!statement.ok) return statement
    statements.push(statement.value)
  }
  return ok({ version, statements })
}

/** `*` and `?` wildcards, the rest literal; `caseless` for actions, which IAM matches so. */
export function wildcardMatch(pattern: string, value: string, caseless = false): boolean {
  const escaped = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&')
  const source = escaped.replaceAll('*', '.*').replaceAll('?', '.')
  return new RegExp(`^${source}$`, caseless ? 'is' : 's').test(value)
}

function matchesPrincipal(statement: PolicyStatement, user: PolicyRequest['user']): boolean {
  const hit = statement.principals.values.some(
    (name) => name === '*' || (user !== null && (name === user.id || name === user.name)),
  )
  return statement.principals.not ? !hit : hit
}

function matchesList(list: { not: boolean; values: string[] }, value: string, caseless: boolean) {
  const hit = list.values.some((pattern) => wildcardMatch(pattern, value, caseless))
  return list.not ? !hit : hit
}

function contextValues(context: PolicyRequest['context'], key: string): string[] | undefined {
  if (Object.hasOwn(context, key)) return context[key]
  const lower = key.toLowerCase()
  const found = Object.keys(context).find((name) => name.toLowerCase() === lower)
  return found === undefined ? undefined : context[found]
}

function ipInCidr(address: string, cidr: string): boolean {
  const [range = '', bitsText] = cidr.split('/')
  const family = isIP(range)
  if (family === 0 || isIP(address) !== family) return false
  const bits = bitsText === undefined ? (family === 4 ? 32 : 128) : Number(bitsText)
  const toBig = (text: string): bigint =>
    family === 4
      ? text.split('.').reduce((sum, part) => (sum << 8n) + BigInt(Number(part)), 0n)
      : expandIpv6(text)
  const width = family === 4 ? 32 : 128
  const shift = BigInt(width - bits)
  return toBig(address) >> shift === toBig(range) >> shift
}

function expandIpv6(text: string): bigint {
  const [head = '', tail] = text.split('::')
  const headParts = head === '' ? [] : head.split(':')
  const tailParts = tail === undefined || tail === '' ? [] : tail.split(':')
  const missing = 8 - headParts.length - tailParts.length
  const parts = [...headParts, ...new Array<string>(Math.max(0, missing)).fill('0'), ...tailParts]
  return parts.reduce((sum, part) => (sum << 16n) + BigInt(parseInt(part, 16) || 0), 0n)
}

/** One value of the request against one of the policy, by the base operator. */
function compare(base: string, actual: string, expected: string): boolean {
  switch (base) {
    case 'StringEquals':
      return actual === expected
    case 'StringNotEquals':
      return actual !== expected
    case 'StringEqualsIgnoreCase':
      return actual.toLowerCase() === expected.toLowerCase()
    case 'StringNotEqualsIgnoreCase':
      return actual.toLowerCase() !== expected.toLowerCase()
    case 'StringLike':
      return wildcardMatch(expected, actual)
    case 'StringNotLike':
      return !wildcardMatch(expected, actual)
    case 'Bool':
      return actual.toLowerCase() === expected.toLowerCase()
    case 'IpAddress':
      return ipInCidr(actual, expected)
    case 'NotIpAddress':
      return !ipInCidr(actual, expected)
  }
  if (base.startsWith('Numeric')) {
    const a = Number(actual)
    const b = Number(expected)
    if (Number.isNaN(a) || Number.isNaN(b)) return false
    return ordered(base.slice('Numeric'.length), a, b)
  }
  if (base.startsWith('Date')) {
    const a = dateOf(actual)
    const b = dateOf(expected)
    if (Number.isNaN(a) || Number.isNaN(b)) return false
    return ordered(base.slice('Date'.length), a, b)
  }
  return false
}

/** ISO 8601 dates, or epoch seconds as IAM takes them. */
function dateOf(text: string): number {
  return /^\d+$/.test(text) ? Number(text) * 1000 : Date.parse(text)
}

function ordered(relation: string, a: number, b: number): boolean {
  switch (relation) {
    case 'Equals':
      return a === b
    case 'NotEquals':
      return a !== b
    case 'LessThan':
      return a < b
    case 'LessThanEquals':
      return a <= b
    case 'GreaterThan':
      return a > b
    case 'GreaterThanEquals':
      return a >= b
    default:
      return false
  }
}

/** Negated operators hold for a value only when it matches none of the policy's values, and
 * hold when the request has no such key (IAM: "the right key is not present, the condition is
 * true"). */
const NEGATED = new Set([
  'StringNotEquals',
  'StringNotEqualsIgnoreCase',
  'StringNotLike',
  'NumericNotEquals',
  'DateNotEquals',
  'NotIpAddress',
])

function conditionHolds(operator: string, key: string, expected: string[], request: PolicyRequest) {
  const { set, base, ifExists } = operatorParts(operator)
  const actual = contextValues(request.context, key)
  if (base === 'Null') {
    const absent = actual === undefined || actual.length === 0
    return expected.some((value) => (value.toLowerCase() === 'true') === absent)
  }
  if (actual === undefined || actual.length === 0) {
    // Absent: IfExists and ForAllValues (over an empty set) hold, and so do negated operators.
    return ifExists || set === 'all' || NEGATED.has(base)
  }
  const one = (value: string): boolean =>
    NEGATED.has(base)
      ? expected.every((wanted) => compare(base, value, wanted))
      : expected.some((wanted) => compare(base, value, wanted))
  if (set === 'all') return actual.every(one)
  return actual.some(one)
}

function conditionsHold(statement: PolicyStatement, request: PolicyRequest): boolean {
  return Object.entries(statement.conditions).every(([operator, keys]) =>
    Object.entries(keys).every(([key, expected]) =>
      conditionHolds(operator, key, expected, request),
    ),
  )
}

function applies(statement: PolicyStatement, request: PolicyRequest): boolean {
  return (
    matchesPrincipal(statement, request.user) &&
    matchesList(statement.actions, request.action, true) &&
    matchesList(statement.resources, request.resource, false) &&
    conditionsHold(statement, request)
  )
}

/** What the policy says of a request: an explicit Deny wins over any Allow. */
export function evaluatePolicy(policy: BucketPolicy, request: PolicyRequest): PolicyDecision {
  let decision: PolicyDecision = 'none'
  for (const statement of policy.statements) {
    if (!applies(statement, request)) continue
    if (statement.effect === 'Deny') return 'deny'
    decision = 'allow'
  }
  return decision
}

/** Whether the policy makes the bucket public (GetBucketPolicyStatus): a statement that allows
 * everyone (`*`) without a condition that narrows who may ask. */
export function isPublicPolicy(policy: BucketPolicy): boolean {
  return policy.statements.some(
    (statement) =>
      statement.effect === 'Allow' &&
      !statement.principals.not &&
      statement.principals.values.includes('*') &&
      Object.keys(statement.conditions).length === 0,
  )
}
