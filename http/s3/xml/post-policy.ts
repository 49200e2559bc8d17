/** @module The policy document of a browser form upload (S3's POST Object): base64 of a JSON
 * object with `expiration` (ISO 8601) and `conditions`, each an exact match (`{"field": "value"}`
 * or `["eq", "$field", "value"]`), a prefix (`["starts-with", "$field", "prefix"]`) or the file's
 * size bounds (`["content-length-range", min, max]`). Field names compare case-insensitively, as in
 * S3. A form passes when the policy has not expired, every condition holds, and every field but
 * those S3 exempts is named by a condition; otherwise S3's 403 AccessDenied with its message
 * ("Invalid according to Policy: ..."). A document that is not such a policy is S3's
 * InvalidPolicyDocument. Pure functions. */
import { fail, ok, type Result } from '../../../protocol/errors.js'

export type PolicyCondition =
  | { kind: 'eq' | 'starts-with'; field: string; value: string; text: string }
  | { kind: 'content-length-range'; min: number; max: number }

export interface PostPolicy {
  expirationMs: number
  conditions: PolicyCondition[]
}

/** Conditions a policy may hold: far more than any form has fields. */
const CONDITIONS_MAX = 256

/** Fields that need no condition: the policy and its signature, the file, the bucket (the URL
 * names it), and x-ignore-*. */
const EXEMPT_FIELDS = new Set(['policy', 'x-amz-signature', 'file', 'bucket'])

function invalid(detail: string): Result<never> {
  return fail('invalid_policy_document', `Invalid Policy: ${detail}`)
}

export function parsePostPolicy(base64: string): Result<PostPolicy> {
  let document: unknown
  try {
    document = JSON.parse(Buffer.from(base64, 'base64').toString('utf8'))
  } catch {
    return invalid('Invalid JSON.')
  }
  if (typeof document !== 'object' || document === null || Array.isArray(document)) {
    return invalid('Invalid JSON.')
  }
  const { expiration, conditions } = document as Record<string, unknown>
  if (expiration === undefined) return invalid('Policy missing expiration.')
  const expirationMs = typeof expiration === 'string' ? Date.parse(expiration) : Number.NaN
  if (Number.isNaN(expirationMs)) {
    return invalid(`Invalid 'expiration' value: '${String(expiration)}'`)
  }
  if (conditions === undefined) return invalid('Policy missing conditions.')
  if (!Array.isArray(conditions) || conditions.length > CONDITIONS_MAX) {
    return invalid('Invalid conditions.')
  }
  const parsed: PolicyCondition[] = []
  for (const condition of conditions as unknown[]) {
    const one = parseCondition(condition)
    if (!one.ok) return one
    parsed.push(one.value)
  }
  return ok({ expirationMs, conditions: parsed })
}

function parseCondition(condition: unknown): Result<PolicyCondition> {
  const text = JSON.stringify(condition)
  if (typeof condition === 'object' && condition !== null && !Array.isArray(condition)) {
    const entries = Object.entries(condition)
    const [entry] = entries
    if (entries.length !== 1 || entry === undefined || typeof entry[1] !== 'string') {
      return invalid(`Invalid Simple-Condition: ${text}`)
    }
    return ok({ kind: 'eq', field: entry[0].toLowerCase(), value: entry[1], text })
  }
  if (!Array.isArray(condition) || condition.length !== 3) {
    return invalid(`Invalid Condition: ${text}`)
  }
  const [operator, first, second] = condition as unknown[]
  const name = typeof operator === 'string' ? operator.toLowerCase() : ''
  if (name === 'content-length-range') {
    const min = Number(first)
    const max = Number(second)
    if (!Number.isSafeInteger(min) || !Number.isSafeInteger(max) || min < 0 || max < min) {
      return invalid(`Invalid content-length-range: ${text}`)
    }
    return ok({ kind: 'content-length-range', min, max })
  }
  if (name !== 'eq' && name !== 'starts-with') {
    return invalid(`Unknown condition operator: ${String(operator)}`)
  }
  if (typeof first !== 'string' || !first.startsWith('$') || typeof second !== 'string') {
    return invalid(`Invalid Condition: ${text}`)
  }
  return ok({ kind: name, field: first.slice(1).toLowerCase(), value: second, text })
}

function denied(detail: string): Result<never> {
  return fail('access_denied', `Invalid according to Policy: ${detail}`)
}

/** Checks the form's fields (names lower-cased) of an upload to `bucket` against the policy at
 * `nowMs`: expiry first, then each condition in order, then fields no condition names. */
export function checkPostPolicy(
  policy: PostPolicy,
  form: { bucket: string; fields: ReadonlyMap<string, string> },
  nowMs: number,
): Result<null> {
  const { bucket, fields } = form
  if (nowMs > policy.expirationMs) return denied('Policy expired.')
  const named = new Set<string>()
  for (const condition of policy.conditions) {
    if (condition.kind === 'content-length-range') continue
    named.add(condition.field)
    const value = condition.field === 'bucket' ? bucket : fields.get(condition.field)
    const holds =
      value !== undefined &&
      (condition.kind === 'eq' ? value === condition.value : value.startsWith(condition.value))
    if (!holds) return denied(`Policy Condition failed: ${condition.text}`)
  }
  const extra = [...fields.keys()].filter(
    (name) => !named.has(name) && !EXEMPT_FIELDS.has(name) && !name.startsWith('x-ignore-'),
  )
  if (extra.length > 0) return denied(`Extra input fields: ${extra.join(', ')}`)
  return ok(null)
}

/** The bounds of the file's size the policy sets (the last such condition), or none. */
export function sizeRange(policy: PostPolicy): { min: number; max: number } | null {
  let range: { min: number; max: number } | null = null
  for (const condition of policy.conditions) {
    if (condition.kind === 'content-length-range') range = condition
  }
  return range
}
