/** @module Admin request bodies from Node's request stream: read with a bound (a body larger than
 * ADMIN_BODY_BYTES_MAX is refused without buffering the rest), and unread bodies drained after the
 * reply, also with a bound. Draining, rather than closing the connection at once, lets the client
 * read the reply: a socket closed with unread bytes is reset, and a reset can discard a reply the
 * client has not read yet. */
import type { IncomingMessage } from 'node:http'
import { fail, ok, type Result } from '../../protocol/errors.js'
import { ADMIN_BODY_BYTES_MAX, parseJsonObject, type JsonObject } from './input.js'

/** Past these, a client still sending an unwanted body loses its connection. */
const DRAIN_BYTES_MAX = 1024 * 1024
const DRAIN_MS_MAX = 5_000

const TOO_LARGE = `The body is larger than ${ADMIN_BODY_BYTES_MAX} bytes.`

export function hasBody(incoming: IncomingMessage): boolean {
  const length = incoming.headers['content-length']
  return (
    (length !== undefined && length !== '0') || incoming.headers['transfer-encoding'] !== undefined
  )
}

/** The whole body, at most ADMIN_BODY_BYTES_MAX bytes. */
export function readBody(incoming: IncomingMessage): Promise<Result<Uint8Array>> {
  const declared = Number(incoming.headers['content-length'] ?? 0)
  if (declared > ADMIN_BODY_BYTES_MAX) return Promise.resolve(fail('invalid_data', TOO_LARGE))
  if (incoming.readableEnded) return Promise.resolve(ok(new Uint8Array(0)))
  return new Promise((resolve) => {
    const pieces: Buffer[] = []
    let length = 0
    const finish = (result: Result<Uint8Array>): void => {
      incoming.off('data', onData)
      incoming.off('end', onEnd)
      incoming.off('error', onAbort)
      incoming.off('close', onAbort)
      incoming.pause()
      resolve(result)
    }
    const onData = (chunk: Buffer): void => {
      length += chunk.length
      if (length > ADMIN_BODY_BYTES_MAX) finish(fail('invalid_data', TOO_LARGE))
      else pieces.push(chunk)
    }
    const onEnd = (): void => finish(ok(new Uint8Array(Buffer.concat(pieces, length))))
    const onAbort = (): void => finish(fail('invalid_data', 'the client stopped sending'))
    incoming.on('data', onData)
    incoming.on('end', onEnd)
    incoming.on('error', onAbort)
    incoming.on('close', onAbort)
  })
}

/** The body as a JSON object, read with a bound. */
export async function readJsonObject(incoming: IncomingMessage): Promise<Result<JsonObject>> {
  const bytes = await readBody(incoming)
  if (!bytes.ok) return bytes
  return parseJsonObject(bytes.value)
}

/** Reads and discards what is left of a body the reply did not need, within a bound. */
export function drainBody(incoming: IncomingMessage): void {
  if (incoming.readableEnded || incoming.destroyed || !hasBody(incoming)) return
  let drained = 0
  const stop = (): void => {
    clearTimeout(timer)
    incoming.off('data', onData)
    incoming.off('end', stop)
    incoming.off('error', stop)
  }
  const cut = (): void => {
    stop()
    incoming.socket.destroy()
  }
  const onData = (chunk: Buffer): void => {
    drained += chunk.length
    if (drained > DRAIN_BYTES_MAX) cut()
  }
  const timer = setTimeout(cut, DRAIN_MS_MAX)
  timer.unref()
  incoming.on('data', onData)
  incoming.on('end', stop)
  incoming.on('error', stop)
  incoming.resume()
}
