/** @module Authenticates an S3 request: parses SigV4 or SigV2 (header or presigned), asks iam for
 * the access key's secret and principal (one key cache for both), verifies the signature. A request
 * with no credentials at all is anonymous (anonymousAuth). The payload mode it returns says how the
 * body must be decoded and checked; SigV2 signs no body, so its payload is unsigned. */
import { fail, ok, type Result } from '../../protocol/errors.js'
import type { KeyLookup, Principal } from '../../protocol/messages.js'
import { CALL_TIMEOUT_MS } from '../../protocol/timing.js'
import type { S3Exchange } from './exchange.js'
import type { KeyCache } from './key-cache.js'
import { isSigV2, parseV2, verifyV2 } from './sigv2.js'
import {
  parseAuth,
  UNSIGNED_PAYLOAD,
  verifyAuth,
  type ParsedAuth,
  type SigningKeyCache,
  type VerifiedAuth,
} from './sigv4.js'

export interface Authenticated {
  /** Null for an anonymous request, which only a bucket's policy or ACL admits (access.ts). */
  principal: Principal | null
  parsed: ParsedAuth
  verified: VerifiedAuth
}

/** A request whose credentials verified: a user's. */
export interface SignedAuth extends Authenticated {
  principal: Principal
}

/** What authentication keeps between requests: derived signing keys and key lookups. */
export interface AuthCaches {
  signingKeys: SigningKeyCache
  keys: KeyCache
}

export async function lookupKey(
  ex: S3Exchange,
  keys: KeyCache,
  accessKey: string,
): Promise<Result<KeyLookup>> {
  const cached = keys.get(accessKey)
  if (cached !== undefined) return ok(cached)
  const lookup = await ex.mesh.call('iam', {
    kind: 'iam.lookup-key',
    accessKey,
    requestId: ex.requestId,
    deadlineMs: ex.mesh.now() + CALL_TIMEOUT_MS,
  })
  if (lookup.ok) keys.remember(accessKey, lookup.value)
  return lookup
}

/** `absentPayloadHash`: what a header-signed request without x-amz-content-sha256 signed as its
 * payload hash (S3 requires the header; a non-S3 SigV4 signer of a bodiless call omits it). */
export async function authenticate(
  ex: S3Exchange,
  caches: AuthCaches,
  absentPayloadHash?: string,
): Promise<Result<SignedAuth>> {
  const request = {
    method: ex.method,
    rawPath: ex.rawPath,
    rawQuery: ex.rawQuery,
    headers: ex.headers,
  }
  if (isSigV2(request, ex.query)) return authenticateV2(ex, caches)
  const parsed = parseAuth(request, ex.mesh.now(), absentPayloadHash)
  if (!parsed.ok) return parsed
  const lookup = await lookupKey(ex, caches.keys, parsed.value.accessKey)
  if (!lookup.ok) return lookup
  const verified = verifyAuth(parsed.value, request, lookup.value.secretKey, caches.signingKeys)
  if (!verified.ok) return verified
  return ok({ principal: lookup.value.principal, parsed: parsed.value, verified: verified.value })
}

/** SigV2: the same key lookup; what the body code reads of a SigV4 result says "unsigned". */
async function authenticateV2(ex: S3Exchange, caches: AuthCaches): Promise<Result<SignedAuth>> {
  const request = {
    method: ex.method,
    rawPath: ex.rawPath,
    rawQuery: ex.rawQuery,
    headers: ex.headers,
  }
  const parsed = parseV2(request, ex.query, ex.mesh.now())
  if (!parsed.ok) return parsed
  const lookup = await lookupKey(ex, caches.keys, parsed.value.accessKey)
  if (!lookup.ok) return lookup
  const verified = verifyV2(
    parsed.value,
    request,
    ex.query,
    lookup.value.secretKey,
    resourcePrefix(ex),
  )
  if (!verified.ok) return verified
  const { accessKey, signature, presigned } = parsed.value
  const { principal } = lookup.value
  return ok({ ...unsignedAuth(principal, accessKey, signature, presigned), principal })
}

/** An authentication whose payload nothing signed: SigV2's, and a console session's (whose
 * principal the session's token names, with no access key). */
export function unsignedAuth(
  principal: Principal | null,
  accessKey: string,
  signature: string,
  presigned: boolean,
): Authenticated {
  const payload = { kind: 'unsigned' } as const
  return {
    principal,
    parsed: {
      accessKey,
      scope: { date: '', region: '', service: 's3' },
      amzDate: '',
      signedHeaders: [],
      signature,
      presigned,
      payload,
      payloadHash: UNSIGNED_PAYLOAD,
    },
    verified: {
      accessKey,
      signingKey: new Uint8Array(0),
      scope: '',
      amzDate: '',
      seedSignature: signature,
      payload,
    },
  }
}

/** Query parameters that make a request presigned (SigV4's and SigV2's). */
const PRESIGN_PARAMETERS = [
  'X-Amz-Algorithm',
  'X-Amz-Credential',
  'X-Amz-Signature',
  'AWSAccessKeyId',
  'Signature',
]

/** A request that carries no credentials at all: anonymous, with an unsigned payload. Anything
 * that looks like credentials is authenticated (and refused if it does not verify). */
export function anonymousAuth(ex: S3Exchange): Authenticated | null {
  if (ex.headers['authorization'] !== undefined) return null
  if (PRESIGN_PARAMETERS.some((name) => ex.query.has(name))) return null
  return unsignedAuth(null, '', '', false)
}

/** SigV2 signs `/bucket/key`: a virtual-hosted request names its bucket in the Host instead. */
function resourcePrefix(ex: S3Exchange): string {
  const bucket = ex.target.bucket
  const domain = ex.mesh.config['SVC_DOMAIN']
  if (bucket === null || domain === undefined) return ''
  const host = (ex.headers['host'] ?? '').replace(/:\d+$/, '').toLowerCase()
  return host.endsWith('.' + domain.toLowerCase()) ? `/${bucket}` : ''
}

/** What each role may do on the S3 API (SPEC.md section 5): Readers list and download. The access
 * check (access.ts) asks it of requests whose operation names no action. */
export function mayAccess(principal: Principal | null, write: boolean): Result<null> {
  if (principal === null) return fail('access_denied', 'Access Denied')
  if (!write || principal.role !== 'Reader') return ok(null)
  return fail('access_denied', 'Access Denied')
}
