/** @module Browser form uploads: S3's POST Object (`POST /{bucket}` with multipart/form-data), so a
 * web page can upload without a backend. The form carries its own credentials instead of an
 * Authorization header: a base64 policy document (http/s3/xml/post-policy.ts) and
 * `x-amz-signature`, the HMAC-SHA256 of the policy under the SigV4 signing key of
 * `x-amz-credential`. Once the signature, the policy's conditions and the user's role allow it, the
 * file part streams into the store as a PUT body does (never held whole), its size checked against
 * `content-length-range` while it passes; a file outside the range is aborted, so nothing is
 * stored. The answer follows `success_action_redirect` (303 to it, with bucket, key and ETag) or
 * `success_action_status` (200, 201 with a PostResponse document, or 204 by default). */
import { lockedAttributes } from './object-lock.js'
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import type { Readable } from 'node:stream'
import { objectActor, type ByteSink } from '../../protocol/actor.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import type { PutResult } from '../../protocol/messages.js'
import { checkPostPolicy, parsePostPolicy, sizeRange } from './xml/post-policy.js'
import { storedObjectXml } from './xml/s3-xml.js'
import type { HttpMeta } from '../../protocol/objects.js'
import type { ObjectAttributes } from '../../protocol/object-attributes.js'
import { streamDeadlineMs } from '../../protocol/timing.js'
import { checkAccess } from './access.js'
import { checkQuota } from './quota.js'
import { lookupKey, type AuthCaches } from './authenticate.js'
import { Chunker } from './body.js'
import { objectLocation, send, sendError, sendXml, type S3Exchange } from './exchange.js'
import { isKeyTooLong } from './names.js'
import { formAttributes } from './object-attributes.js'
import { parseHttpMeta, parseUserMeta, versionHeaders } from './object-headers.js'
import { readPostForm, type PostForm } from './post-form.js'
import { ALGORITHM, hmacSha256Hex, parseCredential, signaturesEqual } from './sigv4.js'
import { refusedFormFeature, sendRefusal } from './unsupported.js'

/** A POST on a bucket with a form body, whatever else it carries (S3 routes it so too). */
export function isPostObject(ex: S3Exchange): boolean {
  const { bucket, key } = ex.target
  const type = ex.headers['content-type'] ?? ''
  return (
    ex.method === 'POST' &&
    bucket !== null &&
    key === null &&
    type.toLowerCase().startsWith('multipart/form-data')
  )
}

function missingField(name: string): Result<never> {
  return fail(
    'invalid_argument',
    `Bucket POST must contain a field named '${name}'.  If it is specified, please check the ` +
      'order of the fields.',
  )
}

/** Checks the form's signature and policy; the size range the policy sets. */
async function authorize(
  ex: S3Exchange,
  caches: AuthCaches,
  bucket: string,
  fields: ReadonlyMap<string, string>,
): Promise<Result<{ min: number; max: number } | null>> {
  const policyText = fields.get('policy')
  // A form without a policy is anonymous, which this service never allows.
  if (policyText === undefined) return fail('access_denied', 'Access Denied')
  for (const name of ['x-amz-algorithm', 'x-amz-credential', 'x-amz-date', 'x-amz-signature']) {
    if (fields.get(name) === undefined) return missingField(name)
  }
  if (fields.get('x-amz-algorithm') !== ALGORITHM) {
    return fail('invalid_argument', 'Only AWS4-HMAC-SHA256 is supported for x-amz-algorithm.')
  }
  const credential = parseCredential(fields.get('x-amz-credential') ?? '')
  if (!credential.ok) return fail('invalid_argument', credential.detail)
  const lookup = await lookupKey(ex, caches.keys, credential.value.accessKey)
  if (!lookup.ok) return lookup
  ex.principal = lookup.value.principal
  const signingKey = caches.signingKeys.get(lookup.value.secretKey, credential.value.scope)
  if (
    !signaturesEqual(hmacSha256Hex(signingKey, policyText), fields.get('x-amz-signature') ?? '')
  ) {
    return fail(
      'signature_mismatch',
      'The request signature we calculated does not match the signature you provided. Check ' +
        'your key and signing method.',
    )
  }
  const policy = parsePostPolicy(policyText)
  if (!policy.ok) return policy
  const checked = checkPostPolicy(policy.value, { bucket, fields }, ex.mesh.now())
  if (!checked.ok) return checked
  return ok(sizeRange(policy.value))
}

interface FormObject {
  key: string
  http: HttpMeta
  userMeta: Record<string, string>
  attributes?: ObjectAttributes
}

/** What the form says of the object: its key (`${filename}` replaced), metadata and attributes. */
function objectOf(form: PostForm): Result<FormObject> {
  const key = form.fields.get('key')
  if (key === undefined) return missingField('key')
  const named = key.replaceAll('${filename}', form.filename)
  if (named === '') return fail('invalid_argument', 'User key must have a length greater than 0.')
  if (isKeyTooLong(named)) return fail('key_too_long', 'Your key is too long')
  const record = Object.fromEntries(form.fields)
  const userMeta = parseUserMeta(record)
  if (!userMeta.ok) return userMeta
  const attributes = formAttributes(form.fields)
  if (!attributes.ok) return attributes
  const http = parseHttpMeta(record)
  return ok({ key: named, http, userMeta: userMeta.value, ...attributes.value })
}

export async function postObject(ex: S3Exchange, caches: AuthCaches): Promise<void> {
  const bucket = ex.target.bucket
  assert(bucket !== null)
  const length = Number(ex.headers['content-length'] ?? Number.NaN)
  if (!Number.isSafeInteger(length) || length < 0) {
    return sendError(ex, 'missing_content_length', 'You must provide the Content-Length header.')
  }
  const form = await readPostForm(ex)
  if (!form.ok) return sendError(ex, form.code, form.detail)
  const range = await authorize(ex, caches, bucket, form.value.fields)
  const refused = range.ok ? refusedFormFeature(form.value.fields) : null
  if (refused !== null) {
    form.value.file.resume()
    return sendRefusal(ex, refused)
  }
  const object = range.ok ? objectOf(form.value) : range
  if (!object.ok) {
    form.value.file.resume()
    return sendError(ex, object.code, object.detail)
  }
  assert(range.ok)
  const { key } = object.value
  // The role and the bucket's policy decide on the key the form names, as for a PUT of it; the
  // form's `acl` field is the PUT's x-amz-acl (a public one needs the right to set ACLs).
  ex.target = { bucket, key }
  const acl = form.value.fields.get('acl')
  if (acl !== undefined) ex.headers['x-amz-acl'] = acl
  const access = await checkAccess(ex, ex.principal, 'PostObject', true)
  const quota = access.ok
    ? await checkQuota(ex, 'PostObject', ex.access.rules?.quota ?? null)
    : access
  const fields = Object.fromEntries(form.value.fields)
  const locked = quota.ok ? lockedAttributes(ex, ok(object.value), fields) : quota
  if (!locked.ok) {
    form.value.file.resume()
    return sendError(ex, locked.code, locked.detail)
  }
  const deadlineMs = streamDeadlineMs(ex.mesh.now(), length)
  const [local, remote] = ex.mesh.openStream()
  const pending = ex.mesh.call(objectActor(ex.mesh.config), {
    kind: 'object.put',
    bucket,
    ...object.value,
    ...locked.value,
    expect: {},
    stream: remote,
    streamMd5: true,
    requestId: ex.requestId,
    deadlineMs,
  })
  const pumped = await pumpFile(form.value.file, ex.mesh.sink(local, deadlineMs), range.value)
  const reply = await pending
  // The size range is ours to answer; any other failure of the pump is the store cancelling the
  // stream (no such bucket, say), whose reply then says why.
  if (!pumped.ok && pumped.code !== 'incomplete_body') {
    return sendError(ex, pumped.code, pumped.detail)
  }
  if (!reply.ok) return sendError(ex, reply.code, reply.detail)
  if (!pumped.ok) return sendError(ex, pumped.code, pumped.detail)
  answer(ex, form.value.fields, { bucket, key }, reply.value)
}

/** Streams the file part to the store, within the policy's size range; past its maximum, or
 * short of its minimum at the end, the stream is aborted so that nothing is stored. */
async function pumpFile(
  file: Readable,
  sink: ByteSink,
  range: { min: number; max: number } | null,
): Promise<Result<null>> {
  const chunker = new Chunker(() => sink.buffer())
  const ready: Uint8Array[] = []
  const md5 = createHash('md5')
  let size = 0
  try {
    for await (const data of file as AsyncIterable<Buffer>) {
      size += data.length
      if (range !== null && size > range.max) {
        sink.abort('entity_too_large', 'file larger than the policy allows')
        return fail('entity_too_large', 'Your proposed upload exceeds the maximum allowed size')
      }
      md5.update(data)
      chunker.push(data, ready)
      for (const chunk of ready.splice(0)) await sink.write(chunk)
    }
    if (range !== null && size < range.min) {
      sink.abort('entity_too_small', 'file smaller than the policy allows')
      return fail(
        'entity_too_small',
        'Your proposed upload is smaller than the minimum allowed size',
      )
    }
    if (chunker.pending > 0) await sink.write(chunker.take())
    sink.giveBack(chunker.spare)
    sink.end({}, md5.digest('hex'))
    return ok(null)
  } catch (error) {
    const detail = error instanceof Error ? error.message : 'form body read failed'
    sink.abort('incomplete_body', detail)
    return fail('incomplete_body', detail)
  }
}

function answer(
  ex: S3Exchange,
  fields: ReadonlyMap<string, string>,
  at: { bucket: string; key: string },
  stored: PutResult,
): void {
  const location = objectLocation(ex, at)
  const headers = { etag: stored.etag, location, ...versionHeaders(stored) }
  const redirect = redirectUrl(fields.get('success_action_redirect') ?? fields.get('redirect'))
  if (redirect !== null) {
    redirect.searchParams.set('bucket', at.bucket)
    redirect.searchParams.set('key', at.key)
    redirect.searchParams.set('etag', stored.etag)
    return send(ex, 303, { ...headers, location: redirect.toString() })
  }
  const status = fields.get('success_action_status')
  if (status === '200') return send(ex, 200, headers)
  if (status === '201') {
    return sendXml(
      ex,
      201,
      storedObjectXml('PostResponse', false, { location, ...at, etag: stored.etag }),
      headers,
    )
  }
  send(ex, 204, headers)
}

/** S3 follows a redirect field only when it is an absolute URL; otherwise the status decides. */
function redirectUrl(value: string | undefined): URL | null {
  if (value === undefined || value === '') return null
  try {
    return new URL(value)
  } catch {
    return null
  }
}
