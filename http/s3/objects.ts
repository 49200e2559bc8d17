/** @module S3 object operations: PutObject (streamed), GetObject/HeadObject (ranges, conditions,
 * response overrides, streamed), DeleteObject and CopyObject. Each turns the HTTP request into one
 * object message to the coordinator; bodies move on streams, never whole. */
import { mayBypassGovernance } from './access.js'
import { lockedAttributes } from './object-lock.js'
import type { ServerResponse } from 'node:http'
import { checksumAlgorithmFromHeader } from '../../protocol/checksums.js'
import { evaluateConditions } from '../../protocol/s3-rules/conditions.js'
import { parseCopySource } from '../../protocol/s3-rules/copy-source.js'
import { fail, ok, ServiceError, type ErrorCode, type Result } from '../../protocol/errors.js'
import { INLINE_BLOB_BYTES_MAX, SINGLE_PUT_BYTES_MAX } from '../../protocol/limits.js'
import { objectActor, type ByteSource, type Request } from '../../protocol/actor.js'
import type {
  GetResult,
  MarkerResult,
  ObjectMsg,
  PutResult,
  ReplicaRead,
} from '../../protocol/messages.js'
import type { BodyDigests, Checksums, Expectations } from '../../protocol/objects.js'
import { BodyHasher, namedChecksums } from '../../protocol/body-hasher.js'
import { copyObjectResultXml } from './xml/s3-xml.js'
import { parsePartNumber } from './xml/s3-multipart-xml.js'
import { streamDeadlineMs } from '../../protocol/timing.js'
import type { Authenticated } from './authenticate.js'
import { declaredSize, pumpBody, readWholeBody } from './body.js'
import {
  askCoordinator,
  callDeadline,
  send,
  sendError,
  sendXml,
  type S3Exchange,
} from './exchange.js'
import {
  checksumHeaders,
  objectHeaders,
  parseHttpMeta,
  parseUserMeta,
  versionHeaders,
} from './object-headers.js'
import { resolveRange } from './range.js'
import { copyAttributes, requestAttributes } from './object-attributes.js'
import { conditionsFrom, writeConditions } from './conditions.js'

interface ObjectTarget {
  bucket: string
  key: string
}

/** The x-amz-checksum-* values among `headers`, by algorithm. */
export function headerChecksums(headers: Record<string, string>): Checksums {
  const checksums: Checksums = {}
  for (const [name, value] of Object.entries(headers)) {
    const algorithm = checksumAlgorithmFromHeader(name)
    if (algorithm !== null) checksums[algorithm] = value
  }
  return checksums
}

export function expectations(
  ex: S3Exchange,
  auth: Authenticated,
  size: number,
): Result<Expectations> {
  const expect: Expectations = { size }
  const md5 = ex.headers['content-md5']
  if (md5 !== undefined) {
    if (Buffer.from(md5, 'base64').length !== 16 || !/^[A-Za-z0-9+/]+=*$/.test(md5)) {
      return fail('invalid_digest', 'The Content-MD5 you specified was invalid.')
    }
    expect.md5Base64 = md5
  }
  if (auth.parsed.payload.kind === 'sha256') expect.sha256Hex = auth.parsed.payload.hex
  const checksums = headerChecksums(ex.headers)
  // A checksum announced as a trailer arrives after the body: compute it, check it at the end.
  for (const name of (ex.headers['x-amz-trailer'] ?? '').split(',')) {
    const algorithm = checksumAlgorithmFromHeader(name.trim())
    if (algorithm !== null) checksums[algorithm] = ''
  }
  if (Object.keys(checksums).length > 0) expect.checksums = checksums
  return ok(expect)
}

export async function putObject(
  ex: S3Exchange,
  auth: Authenticated,
  at: ObjectTarget,
): Promise<void> {
  const userMeta = parseUserMeta(ex.headers)
  if (!userMeta.ok) return sendError(ex, userMeta.code, userMeta.detail)
  const attributes = lockedAttributes(ex, requestAttributes(ex.headers))
  if (!attributes.ok) return sendError(ex, attributes.code, attributes.detail)
  const size = declaredSize(ex, auth)
  if (!size.ok) return sendError(ex, size.code, size.detail)
  if (size.value > SINGLE_PUT_BYTES_MAX) {
    return sendError(
      ex,
      'entity_too_large',
      'Your proposed upload exceeds the maximum allowed size',
    )
  }
  const expect = expectations(ex, auth, size.value)
  if (!expect.ok) return sendError(ex, expect.code, expect.detail)
  const conditions = writeConditions(ex.headers)
  const reply = await sendBody<PutResult>(ex, auth, size.value, expect.value, {
    kind: 'object.put',
    ...at,
    http: parseHttpMeta(ex.headers),
    userMeta: userMeta.value,
    ...(conditions === null ? {} : { conditions }),
    ...attributes.value,
  })
  if (!reply.ok) return sendError(ex, reply.code, reply.detail)
  send(ex, 200, {
    etag: reply.value.etag,
    ...checksumHeaders(reply.value.checksums),
    ...versionHeaders(reply.value),
  })
}

/** A message of the body protocol (object.put, upload.part) without its body and deadline. */
type BodyMessage =
  | Omit<Extract<ObjectMsg, { kind: 'object.put' }>, 'body' | 'stream' | 'expect' | keyof Request>
  | Omit<Extract<ObjectMsg, { kind: 'upload.part' }>, 'body' | 'stream' | 'expect' | keyof Request>

/** Sends the request's body to the coordinator with `message`: inline when it is small, else on a
 * stream, pumped from the socket with backpressure while the store takes it in. */
export async function sendBody<T>(
  ex: S3Exchange,
  auth: Authenticated,
  size: number,
  expect: Expectations,
  message: BodyMessage,
): Promise<Result<T>> {
  const base = { ...message, expect, requestId: ex.requestId }
  // A single node's body is hashed on this thread, and a large one written here too, to a file
  // the store lends: bytes and hashes stay off the store's thread.
  const single = objectActor(ex.mesh.config) === 'replica-store'
  if (size <= INLINE_BLOB_BYTES_MAX) {
    const body = await readWholeBody(ex, auth, size, 'incomplete_body')
    if (!body.ok) return body
    const expected = { ...expect, ...withTrailers(expect, body.value.trailers) }
    return ex.mesh.call(objectActor(ex.mesh.config), {
      ...base,
      body: body.value.bytes,
      ...(single ? { digests: await hashed(body.value.bytes, expected) } : {}),
      deadlineMs: callDeadline(ex),
      expect: expected,
    } as ObjectMsg) as Promise<Result<T>>
  }
  const deadlineMs = streamDeadlineMs(ex.mesh.now(), size)
  const [local, remote] = ex.mesh.openStream()
  // Listening before the call: a call that cannot be sent closes `remote` at once.
  const sink = single
    ? ex.mesh.lentWriteSink(local, size, namedChecksums(expect))
    : ex.mesh.sink(local, deadlineMs)
  const pending = ex.mesh.call(objectActor(ex.mesh.config), {
    ...base,
    stream: remote,
    streamMd5: true,
    ...(single ? { lentWrite: true } : {}),
    deadlineMs,
  } as ObjectMsg) as Promise<Result<T>>
  const pumped = pumpBody(ex, auth, sink)
  // A call that fails while the client still sends (an actor on its path died) is the answer now:
  // the rest of the body could not be stored, and waiting for it ties the answer to the client.
  const early = await Promise.race([pending, pumped.then(() => null)])
  if (early !== null && !early.ok) {
    sink.abort(early.code, early.detail)
    return early
  }
  await pumped
  return pending
}

function hashed(bytes: Uint8Array, expect: Expectations): Promise<BodyDigests> {
  const hasher = new BodyHasher(namedChecksums(expect), true)
  hasher.update(bytes)
  return hasher.digests()
}

/** Trailer checksums of an inline body become plain expectations. */
function withTrailers(expect: Expectations, trailers: Record<string, string>): Expectations {
  const checksums = { ...expect.checksums }
  for (const [name, value] of Object.entries(trailers)) {
    const algorithm = checksumAlgorithmFromHeader(name)
    if (algorithm !== null) checksums[algorithm] = value
  }
  return Object.keys(checksums).length > 0 ? { checksums } : {}
}

interface Answer {
  status: number
  headers: Record<string, string>
  start: number
  end: number
}

/** Status, headers and byte range of a GET/HEAD answer for `info`, or null when an answer without
 * a body (304, 412, 416) has been sent. */
function planAnswer(
  ex: S3Exchange,
  info: GetResult['info'],
  part?: GetResult['part'],
): Answer | null {
  const failed = evaluateConditions(info, conditionsFrom(ex.headers, ''), 'read')
  const headers = objectHeaders(info, ex.query)
  const checksumMode = ex.headers['x-amz-checksum-mode']?.toUpperCase() === 'ENABLED'
  if (part !== undefined && info.partsCount !== undefined) {
    // One part of a multipart object: S3 answers it as a range, with the object's part count, and
    // with checksum mode the part's own checksum, of the object's checksum type.
    headers['x-amz-mp-parts-count'] = String(info.partsCount)
    if (failed === null && part.end >= part.start) {
      headers['content-range'] = `bytes ${part.start}-${part.end}/${info.size}`
      if (checksumMode && part.checksums !== undefined) {
        Object.assign(headers, checksumHeaders(part.checksums, info.checksumType))
      }
      return { status: 206, headers, start: part.start, end: part.end }
    }
  }
  if (failed !== null) {
    if (failed === 'not_modified') {
      send(ex, 304, { etag: info.etag, 'last-modified': headers['last-modified'] ?? '' })
    } else {
      sendError(ex, failed, 'At least one of the pre-conditions you specified did not hold')
    }
    return null
  }
  const range = resolveRange(ex.headers['range'], info.size)
  if (range.kind === 'unsatisfiable') {
    ex.outgoing.setHeader('content-range', `bytes */${info.size}`)
    sendError(ex, 'invalid_range', 'The requested range is not satisfiable')
    return null
  }
  const start = range.kind === 'partial' ? range.start : 0
  const end = range.kind === 'partial' ? range.end : info.size - 1
  if (range.kind === 'partial') headers['content-range'] = `bytes ${start}-${end}/${info.size}`
  // A stored checksum describes the whole object, so only a whole-object answer carries it.
  if (range.kind === 'whole' && checksumMode) {
    Object.assign(headers, checksumHeaders(info.checksums, info.checksumType))
  }
  return { status: range.kind === 'partial' ? 206 : 200, headers, start, end }
}

function getCall(ex: S3Exchange, at: ObjectTarget, extra: object, deadlineMs: number) {
  return ex.mesh.call(objectActor(ex.mesh.config), {
    kind: 'object.get',
    ...at,
    ...extra,
    requestId: ex.requestId,
    deadlineMs,
  }) as Promise<Result<GetResult | MarkerResult>> // not `stamped`: never AbsentResult
}

/** GET and HEAD. A small object comes whole in the first reply. On a single node the first reply
 * lends a larger object's file, which this thread reads itself (one round trip); otherwise a
 * larger one is read with a second request that carries a stream, and the answer follows that
 * second reply (the object may have been replaced in between: what is sent is always one complete
 * version). A read that meets a corrupt copy before its first byte goes out is made once more: the
 * store knows the copy damaged from then on, so the second read takes another replica's copy
 * (cluster mode) or answers 500 at once, never the wrong bytes. */
export async function getObject(ex: S3Exchange, at: ObjectTarget): Promise<void> {
  if ((await getOnce(ex, at, true)) === 'again') await getOnce(ex, at, false)
}

/** One read; 'again' (nothing sent yet) when `retry` and the copy read turned out corrupt. */
async function getOnce(ex: S3Exchange, at: ObjectTarget, retry: boolean): Promise<'again' | void> {
  const versionId = ex.query.get('versionId')
  const part = requestedPart(ex)
  if (!part.ok) return sendError(ex, part.code, part.detail)
  const byPart = {
    ...(part.value === null ? {} : { partNumber: part.value }),
    ...(versionId === null ? {} : { versionId }),
  }
  const head = ex.method === 'HEAD'
  const deadlineMs = callDeadline(ex)
  // A single node's store lends a file blob to this thread, which reads it itself.
  const lend = objectActor(ex.mesh.config) === 'replica-store' ? { lend: true as const } : {}
  const firstLook = head ? byPart : { ...byPart, inline: true as const, ...lend }
  // A single node's current version is read on this thread when it can be.
  const onThread =
    versionId === null && part.value === null ? ex.mesh.readCurrent(at.bucket, at.key, !head) : null
  const first = onThread !== null ? ok(onThread) : await getCall(ex, at, firstLook, deadlineMs)
  if (!first.ok) return sendError(ex, first.code, first.detail)
  if ('marker' in first.value) return sendMarker(ex, first.value)
  const firstAnswer = planAnswer(ex, first.value.info, first.value.part)
  if (firstAnswer === null) return
  const length = firstAnswer.end - firstAnswer.start + 1
  if (head)
    return send(ex, firstAnswer.status, { ...firstAnswer.headers, 'content-length': length })
  const inline = first.value.body
  if (inline !== undefined || length <= 0) {
    const bytes = inline?.subarray(firstAnswer.start, firstAnswer.end + 1) ?? new Uint8Array(0)
    return send(ex, firstAnswer.status, firstAnswer.headers, bytes)
  }
  const lent = first.value.lent
  if (lent !== undefined) {
    const source = ex.mesh.lentSource(lent, streamDeadlineMs(ex.mesh.now(), length))
    source.request(firstAnswer.start, firstAnswer.end)
    const headers = { ...firstAnswer.headers, 'content-length': length }
    return streamOut(ex, firstAnswer.status, headers, source, retry)
  }
  // A cluster's coordinator says where another node's bytes are, for this thread to read them.
  const direct = objectActor(ex.mesh.config) === 'coordinator'
  return getStreamed(ex, at, byPart, length, retry, direct)
}

/** The read with a stream: the bytes come on it, or (`direct`) from the node the answer names,
 * read here; a read of that node that fails before its first byte is asked for again without
 * `direct`, and the coordinator relays it, from the next replica if need be. */
async function getStreamed(
  ex: S3Exchange,
  at: ObjectTarget,
  byPart: { partNumber?: number; versionId?: string },
  length: number,
  retry: boolean,
  direct: boolean,
): Promise<'again' | void> {
  const [local, remote] = ex.mesh.openStream()
  const streamed = { ...byPart, stream: remote, ...(direct ? { direct: true as const } : {}) }
  const deadlineMs = streamDeadlineMs(ex.mesh.now(), length)
  const second = await getCall(ex, at, streamed, deadlineMs)
  const source = ex.mesh.source(local, callDeadline(ex))
  if (!second.ok || 'marker' in second.value) {
    source.cancel('internal', 'request failed')
    if (retry && !second.ok && second.code === 'corrupt') return 'again'
    if (second.ok) return sendMarker(ex, second.value as MarkerResult)
    return sendError(ex, second.code, second.detail)
  }
  const answer = planAnswer(ex, second.value.info, second.value.part)
  const body = second.value.body
  const readFrom = second.value.readFrom
  if (answer === null || body !== undefined || answer.end < answer.start) {
    source.cancel('internal', 'no stream needed')
    if (answer === null) return
    const bytes = body?.subarray(answer.start, answer.end + 1) ?? new Uint8Array(0)
    return send(ex, answer.status, answer.headers, bytes)
  }
  const contentLength = answer.end - answer.start + 1
  const headers = { ...answer.headers, 'content-length': contentLength }
  if (readFrom === undefined) {
    source.request(answer.start, answer.end)
    return streamOut(ex, answer.status, headers, source, retry)
  }
  source.cancel('internal', 'the bytes are read from their node')
  const range = { start: answer.start, end: answer.end }
  const fromReplica = await replicaSource(ex, readFrom, range, deadlineMs)
  if (fromReplica === null) return getStreamed(ex, at, byPart, length, retry, false)
  return streamOut(ex, answer.status, headers, fromReplica, retry)
}

/** The bytes of `range` from the node that holds them, once its answer shows the version the
 * quorum found (its key stamp); null, with nothing read, when it does not or it failed. */
async function replicaSource(
  ex: S3Exchange,
  read: ReplicaRead,
  range: { start: number; end: number },
  deadlineMs: number,
): Promise<ByteSource | null> {
  const { answer, source } = ex.mesh.readReplica(read, range, deadlineMs)
  const head = await answer
  if (head.ok && 'info' in head.value && head.value.keyStamp === read.keyStamp) return source
  const why = head.ok ? 'the object changed while it was read' : head.detail
  source.cancel('unavailable', why)
  ex.mesh.log.warn({ requestId: ex.requestId, replica: read.target.id, why }, 'direct read failed')
  return null
}

/** A delete marker where an object was asked for: 404 NoSuchKey for the current version, 405
 * MethodNotAllowed for a marker named by id; both say it is a marker, and which. */
export function sendMarker(ex: S3Exchange, found: MarkerResult): void {
  const { versionId, lastModifiedMs, byId } = found.marker
  ex.outgoing.setHeader('x-amz-delete-marker', 'true')
  ex.outgoing.setHeader('x-amz-version-id', versionId)
  ex.outgoing.setHeader('last-modified', new Date(lastModifiedMs).toUTCString())
  if (byId) {
    ex.outgoing.setHeader('allow', 'DELETE')
    return sendError(
      ex,
      'method_not_allowed',
      'The specified method is not allowed against this resource.',
    )
  }
  sendError(ex, 'no_such_key', 'The specified key does not exist.')
}

/** GET/HEAD ?partNumber=N: the part number, null without one. S3 refuses it with a Range. */
function requestedPart(ex: S3Exchange): Result<number | null> {
  const value = ex.query.get('partNumber')
  if (value === null) return ok(null)
  if (ex.headers['range'] !== undefined) {
    return fail(
      'invalid_request',
      'Cannot specify both Range header and partNumber query parameter',
    )
  }
  return parsePartNumber(value)
}

/** Sends the body once its first chunk came; 'again' (nothing sent) when `retry` and the stream
 * failed before it as `corrupt`. */
async function streamOut(
  ex: S3Exchange,
  status: number,
  headers: Record<string, string | number>,
  source: ReturnType<S3Exchange['mesh']['source']>,
  retry: boolean,
): Promise<'again' | void> {
  const out = ex.outgoing
  let first: Uint8Array | null
  try {
    first = await source.next()
  } catch (error) {
    const code = streamFailure(error)
    if (retry && code === 'corrupt') return 'again'
    return sendError(ex, code, String(error))
  }
  out.statusCode = status
  out.setHeader('x-amz-request-id', ex.requestId)
  for (const [name, value] of Object.entries(headers)) out.setHeader(name, value)
  let closed = false
  out.once('close', () => {
    closed = true
    if (!out.writableFinished) source.cancel('incomplete_body', 'client went away')
  })
  try {
    for (let chunk = first; chunk !== null && !closed; chunk = await source.next()) {
      const sent = chunk
      // Once the socket has taken the bytes, the buffer goes back to the store for reuse.
      if (!out.write(sent, () => source.release(sent))) await drained(out)
    }
    out.end()
  } catch (error) {
    // Headers are out: the only honest signal left is to cut the connection short.
    ex.mesh.log.warn({ requestId: ex.requestId, err: String(error) }, 'download aborted')
    out.destroy()
  }
}

/** What a stream failing before the first byte answers: a dead or slow store (`unavailable`,
 * `timeout`, `busy`) is a 503 the client may retry, damaged bytes are `corrupt`; the client asked
 * nothing wrong, so anything else is the server's own fault. */
function streamFailure(error: unknown): ErrorCode {
  const code = error instanceof ServiceError ? error.code : 'internal'
  switch (code) {
    case 'unavailable':
    case 'timeout':
    case 'busy':
    case 'corrupt':
      return code
    default:
      return 'internal'
  }
}

function drained(out: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      out.off('drain', done)
      out.off('close', done)
      resolve()
    }
    out.on('drain', done)
    out.on('close', done)
  })
}

export async function deleteObject(ex: S3Exchange, at: ObjectTarget): Promise<void> {
  const versionId = ex.query.get('versionId')
  const reply = await askCoordinator(ex, {
    kind: 'object.delete',
    ...at,
    ...(versionId === null ? {} : { versionId }),
    ...(mayBypassGovernance(ex, at) ? { bypassGovernance: true as const } : {}),
  })
  if (!reply.ok) return sendError(ex, reply.code, reply.detail)
  const headers: Record<string, string> = versionHeaders(reply.value)
  if (reply.value.deleteMarker) headers['x-amz-delete-marker'] = 'true'
  send(ex, 204, headers)
}

export async function copyObject(ex: S3Exchange, at: ObjectTarget, header: string): Promise<void> {
  const source = parseCopySource(header)
  if (!source.ok) return sendError(ex, source.code, source.detail)
  const directive = (ex.headers['x-amz-metadata-directive'] ?? 'COPY').toUpperCase()
  if (directive !== 'COPY' && directive !== 'REPLACE') {
    return sendError(ex, 'invalid_argument', 'Unknown metadata directive.')
  }
  const attributes = lockedAttributes(ex, copyAttributes(ex.headers))
  if (!attributes.ok) return sendError(ex, attributes.code, attributes.detail)
  let replace
  if (directive === 'REPLACE') {
    const userMeta = parseUserMeta(ex.headers)
    if (!userMeta.ok) return sendError(ex, userMeta.code, userMeta.detail)
    replace = { http: parseHttpMeta(ex.headers), userMeta: userMeta.value }
  }
  const targetConditions = writeConditions(ex.headers)
  const reply = await askCoordinator(ex, {
    kind: 'object.copy',
    source: source.value,
    target: at,
    ...(replace === undefined ? {} : { replace }),
    ...attributes.value,
    conditions: conditionsFrom(ex.headers, 'x-amz-copy-source-'),
    ...(targetConditions === null ? {} : { targetConditions }),
  })
  if (!reply.ok) return sendError(ex, reply.code, reply.detail)
  const headers = versionHeaders(reply.value)
  if (reply.value.sourceVersionId !== undefined) {
    headers['x-amz-copy-source-version-id'] = reply.value.sourceVersionId
  }
  for (const [name, value] of Object.entries(headers)) ex.outgoing.setHeader(name, value)
  sendXml(ex, 200, copyObjectResultXml(reply.value))
}
