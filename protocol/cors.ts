/** @module Bucket CORS as pure functions: the configuration of SPEC.md section 2 as data, its XML
 * codec (the body of PutBucketCors, the answer of GetBucketCors) and Amazon S3's rule matching.
 *
 * Validation follows S3: a body that does not fit the schema (wrong root, unknown element, a rule
 * without AllowedOrigin or AllowedMethod, a MaxAgeSeconds that is not an integer) is
 * malformed_xml; a well-formed body that S3 refuses on its meaning (a method outside GET, PUT,
 * POST, DELETE, HEAD, more than one `*` in an origin or allowed header, a `*` in an expose header,
 * over CORS_RULES_MAX rules) is invalid_request with S3's own message. Beyond S3, header names must
 * be HTTP tokens and origins visible ASCII: both end up in response headers or are compared with
 * request headers, which can hold nothing else. Values are trimmed; order is kept, so GetBucketCors
 * answers exactly what was put. The store asserts `validateCorsConfiguration` on what it receives.
 *
 * Matching (for a preflight and for an actual request carrying Origin): the first rule whose
 * origins match the Origin (exactly, or with its one `*` standing for any run of characters), whose
 * methods hold the method (Access-Control-Request-Method for a preflight), and, for a preflight,
 * whose allowed headers match every requested header (case-insensitively, `*` as for origins). */
import assert from 'node:assert/strict'
import { fail, ok, type Result } from './errors.js'
import { CORS_RULE_ID_CHARS_MAX, CORS_RULES_MAX } from './limits.js'

export const CORS_METHODS = ['GET', 'PUT', 'POST', 'DELETE', 'HEAD'] as const
export type CorsMethod = (typeof CORS_METHODS)[number]

export interface CorsRule {
  id?: string
  allowedOrigins: string[]
  allowedMethods: CorsMethod[]
  allowedHeaders: string[]
  exposeHeaders: string[]
  maxAgeSeconds?: number
}

export interface CorsConfiguration {
  rules: CorsRule[]
}

/** MaxAgeSeconds is an xsd:int in S3's schema. */
export const MAX_AGE_SECONDS_MAX = 2 ** 31 - 1
/** RFC 9110 token characters: what a header name is made of (`*` is one of them). */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
/** An origin is ASCII (RFC 6454 serializes international names as punycode); empty is accepted,
 * as S3 accepts it, and matches nothing. */
const ORIGIN = /^[\x21-\x7e]*$/
/** An ID is free text, but not control characters. */
const RULE_ID = /^[^\u0000-\u001f\u007f]*$/

export function isCorsMethod(value: string): value is CorsMethod {
  return (CORS_METHODS as readonly string[]).includes(value)
}

function wildcards(value: string): number {
  return value.split('*').length - 1
}

// ---------------------------------------------------------------------------------------------
// Validation

export function tooManyRules<T>(): Result<T> {
  const limit = String(CORS_RULES_MAX)
  return fail(
    'invalid_request',
    `The number of CORS rules should not exceed allowed limit of ${limit} rules.`,
  )
}

/** Checks what S3 checks on the meaning of a configuration (see the module comment). */
export function validateCorsConfiguration(config: CorsConfiguration): Result<CorsConfiguration> {
  if (config.rules.length === 0) return fail('malformed_xml', 'CORSConfiguration holds no CORSRule')
  if (config.rules.length > CORS_RULES_MAX) return tooManyRules()
  for (const rule of config.rules) {
    const checked = validateRule(rule)
    if (!checked.ok) return checked
  }
  return ok(config)
}

function validateRule(rule: CorsRule): Result<null> {
  if (rule.allowedOrigins.length === 0) return fail('malformed_xml', 'CORSRule without origin')
  if (rule.allowedMethods.length === 0) return fail('malformed_xml', 'CORSRule without method')
  if (rule.id !== undefined && rule.id.length > CORS_RULE_ID_CHARS_MAX) {
    const limit = String(CORS_RULE_ID_CHARS_MAX)
    return fail('invalid_argument', `ID length should not exceed allowed limit of ${limit}`)
  }
  if (rule.id !== undefined && !RULE_ID.test(rule.id)) {
    return fail('invalid_argument', 'ID must not contain control characters')
  }
  const maxAge = rule.maxAgeSeconds
  if (maxAge !== undefined && !(Number.isSafeInteger(maxAge) && maxAge >= 0)) {
    return fail('malformed_xml', 'MaxAgeSeconds is not an integer')
  }
  if (maxAge !== undefined && maxAge > MAX_AGE_SECONDS_MAX) {
    return fail('malformed_xml', 'MaxAgeSeconds is out of range')
  }
  for (const method of rule.allowedMethods) {
    if (!isCorsMethod(method)) {
      const text = `Found unsupported HTTP method in CORS config. Unsupported method is ${method}`
      return fail('invalid_request', text)
    }
  }
  return validateRuleValues(rule)
}

function validateRuleValues(rule: CorsRule): Result<null> {
  for (const origin of rule.allowedOrigins) {
    if (wildcards(origin) > 1) {
      return fail(
        'invalid_request',
        `AllowedOrigin "${origin}" can not have more than one wildcard.`,
      )
    }
    if (!ORIGIN.test(origin)) {
      return fail('invalid_request', `AllowedOrigin "${origin}" is not a valid origin.`)
    }
  }
  for (const header of rule.allowedHeaders) {
    if (wildcards(header) > 1) {
      return fail(
        'invalid_request',
        `AllowedHeader "${header}" can not have more than one wildcard.`,
      )
    }
    if (!HEADER_NAME.test(header)) {
      return fail('invalid_request', `AllowedHeader "${header}" is not a valid header name.`)
    }
  }
  for (const header of rule.exposeHeaders) {
    if (header.includes('*')) {
      const text = 'contains wildcard. We currently do not support wildcard for ExposeHeader.'
      return fail('invalid_request', `ExposeHeader "${header}" ${text}`)
    }
    if (!HEADER_NAME.test(header)) {
      return fail('invalid_request', `ExposeHeader "${header}" is not a valid header name.`)
    }
  }
  return ok(null)
}

// ---------------------------------------------------------------------------------------------
// Matching

export interface CorsRequest {
  origin: string
  /** The request's method, or a preflight's Access-Control-Request-Method. */
  method: string
  /** A preflight's Access-Control-Request-Headers, lower-cased (see requestedHeaders). */
  headers: readonly string[]
}

/** `pattern` with at most one `*`, which stands for any run of characters (none included). */
export function wildcardMatch(pattern: string, value: string): boolean {
  const star = pattern.indexOf('*')
  if (star === -1) return pattern === value
  assert(pattern.indexOf('*', star + 1) === -1, 'a pattern has at most one wildcard')
  const head = pattern.slice(0, star)
  const tail = pattern.slice(star + 1)
  return value.length >= head.length + tail.length && value.startsWith(head) && value.endsWith(tail)
}

/** The names of an Access-Control-Request-Headers value: split on commas, trimmed, lower-cased,
 * empty entries dropped. */
export function requestedHeaders(value: string | undefined): string[] {
  if (value === undefined) return []
  return value
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== '')
}

function ruleMatches(rule: CorsRule, request: CorsRequest): boolean {
  if (!(rule.allowedMethods as readonly string[]).includes(request.method)) return false
  if (!rule.allowedOrigins.some((origin) => wildcardMatch(origin, request.origin))) return false
  const allowed = rule.allowedHeaders.map((header) => header.toLowerCase())
  return request.headers.every((name) => allowed.some((pattern) => wildcardMatch(pattern, name)))
}

/** The first rule that allows the request, in the configuration's order. */
export function matchCorsRule(
  config: CorsConfiguration,
  request: CorsRequest,
): CorsRule | undefined {
  return config.rules.find((rule) => ruleMatches(rule, request))
}

/** S3 names every request header a CORS answer depends on. */
export const CORS_VARY = 'Origin, Access-Control-Request-Headers, Access-Control-Request-Method'

/** The headers S3 adds for a matched rule, to a preflight's answer and to an actual response. A
 * rule allowing every origin (`*`) answers `*` and no credentials, as S3 does; any other rule
 * echoes the origin and allows credentials. A preflight's requested headers are echoed. */
export function corsHeaders(rule: CorsRule, request: CorsRequest): Record<string, string> {
  const anyOrigin = rule.allowedOrigins.includes('*')
  const headers: Record<string, string> = {
    'access-control-allow-origin': anyOrigin ? '*' : request.origin,
  }
  if (!anyOrigin) headers['access-control-allow-credentials'] = 'true'
  headers['access-control-allow-methods'] = rule.allowedMethods.join(', ')
  if (request.headers.length > 0) {
    headers['access-control-allow-headers'] = request.headers.join(', ')
  }
  if (rule.exposeHeaders.length > 0) {
    headers['access-control-expose-headers'] = rule.exposeHeaders.join(', ')
  }
  if (rule.maxAgeSeconds !== undefined) {
    headers['access-control-max-age'] = String(rule.maxAgeSeconds)
  }
  headers['vary'] = CORS_VARY
  return headers
}
