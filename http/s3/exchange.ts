/** @module One S3 request/response: the parsed request, and the only functions that write S3
 * responses (success, XML, errors). Responses are written straight to Node's ServerResponse, so an
 * object body streams from the store to the socket without a web-stream detour. Every response
 * carries `x-amz-request-id`. */
import type { AccessState } from './access.js'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { objectActor, type Mesh } from '../../protocol/actor.js'
import type { ErrorCode, Result } from '../../protocol/errors.js'
import type { ObjectMsg, ObjectReply, Principal, Unaddressed } from '../../protocol/messages.js'
import { errorXml } from './xml/s3-xml.js'
import { CALL_TIMEOUT_MS } from '../../protocol/timing.js'
import { closeAfterAnswer } from '../early-answer.js'
import { isNodeFault } from '../request-log.js'
import { s3ErrorFor } from './errors.js'
import type { Target } from './target.js'

export interface S3Exchange {
  requestId: string
  method: string
  rawPath: string
  rawQuery: string
  query: URLSearchParams
  /** Lower-cased names; repeated headers joined with ','. */
  headers: Record<string, string>
  incoming: IncomingMessage
  outgoing: ServerResponse
  target: Target
  mesh: Mesh
  /** Set once the request is authenticated. */
  principal: Principal | null
  /** True once the request body has been read to its end. */
  bodyConsumed: boolean
  /** What the access check decided and used (access.ts), once it has run. */
  access: AccessState
}

export function headerRecord(incoming: IncomingMessage): Record<string, string> {
  const record: Record<string, string> = {}
  for (const [name, value] of Object.entries(incoming.headers)) {
    if (value === undefined) continue
    record[name] = Array.isArray(value) ? value.join(',') : value
  }
  return record
}

export function send(
  ex: S3Exchange,
  status: number,
  headers: Record<string, string | number>,
  body?: string | Uint8Array,
): void {
  const out = ex.outgoing
  if (out.headersSent) {
    out.destroy()
    return
  }
  out.statusCode = status
  out.setHeader('x-amz-request-id', ex.requestId)
  for (const [name, value] of Object.entries(headers)) out.setHeader(name, value)
  // An unread request body would otherwise be drained after the reply: close the connection,
  // lingering (early-answer.ts).
  if (!ex.bodyConsumed && hasBody(ex.incoming)) closeAfterAnswer(ex.incoming, out)
  if (body === undefined || ex.method === 'HEAD') {
    if (body !== undefined && !out.hasHeader('content-length')) {
      out.setHeader(
        'content-length',
        typeof body === 'string' ? Buffer.byteLength(body) : body.length,
      )
    }
    out.end()
    return
  }
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body
  out.setHeader('content-length', bytes.length)
  out.end(bytes)
}

export function sendXml(ex: S3Exchange, status: number, xml: string, headers = {}): void {
  send(ex, status, { 'content-type': 'application/xml', ...headers }, xml)
}

export function sendError(
  ex: S3Exchange,
  code: ErrorCode,
  detail: string,
  extra?: Record<string, string>,
): void {
  if (code === 'no_such_key' && !ex.access.mayList) {
    return sendError(ex, 'access_denied', 'Access Denied')
  }
  const mapped = s3ErrorFor(code)
  if (isNodeFault(mapped.status)) {
    ex.mesh.log.error({ requestId: ex.requestId, code, detail }, 's3 request failed')
  } else if (mapped.status >= 500) {
    // Its answer carries S3's fixed text only: the detail says what was asked for.
    ex.mesh.log.info({ requestId: ex.requestId, code, detail }, 's3 request refused')
  }
  // A 4xx carries the precise reason; a 5xx only S3's fixed text (the detail is in the log), but
  // for 501 NotImplemented, whose detail names what the client asked for and reveals nothing.
  const precise = mapped.status < 500 || code === 'not_implemented'
  const message = precise && detail !== '' ? detail : mapped.message
  const headers: Record<string, string> = {}
  if (code === 'busy' || code === 'unavailable' || code === 'timeout') headers['retry-after'] = '1'
  if (mapped.status === 304) {
    send(ex, 304, headers)
    return
  }
  const resource = ex.rawPath
  const xml = errorXml({ code: mapped.s3Code, message, resource, requestId: ex.requestId, extra })
  sendXml(ex, mapped.status, xml, headers)
}

function hasBody(incoming: IncomingMessage): boolean {
  const length = incoming.headers['content-length']
  return (
    (length !== undefined && length !== '0') || incoming.headers['transfer-encoding'] !== undefined
  )
}

/** The URL of an object as S3 answers it in `Location` (path style, on the request's host). */
export function objectLocation(ex: S3Exchange, at: { bucket: string; key: string }): string {
  const scheme = ex.incoming.socket && 'encrypted' in ex.incoming.socket ? 'https' : 'http'
  const host = ex.headers['host'] ?? 'localhost'
  return `${scheme}://${host}/${at.bucket}/${encodeURI(at.key)}`
}

/** The object a request names, with the version its `versionId` names, if any. */
export function requestedVersion(
  ex: S3Exchange,
  at: { bucket: string; key: string },
): { bucket: string; key: string; versionId?: string } {
  const versionId = ex.query.get('versionId')
  return versionId === null ? at : { ...at, versionId }
}

/** The deadline of a request to an actor that carries no body: CALL_TIMEOUT_MS from now. */
export function callDeadline(ex: S3Exchange): number {
  return ex.mesh.now() + CALL_TIMEOUT_MS
}

/** Asks the coordinator for `msg` on behalf of this request: with its request id and the deadline
 * of a call that carries no body. The reply is typed by the message kind. */
export function askCoordinator<K extends ObjectMsg['kind']>(
  ex: S3Exchange,
  msg: { kind: K } & Unaddressed<Extract<ObjectMsg, { kind: K }>>,
): Promise<Result<ObjectReply[K]>> {
  const request = { ...msg, requestId: ex.requestId, deadlineMs: callDeadline(ex) }
  // The spread of a generic message is not seen as the message it is: its kind's reply is.
  return ex.mesh.call(objectActor(ex.mesh.config), request as ObjectMsg) as Promise<
    Result<ObjectReply[K]>
  >
}
