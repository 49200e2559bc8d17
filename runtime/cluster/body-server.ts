/** @module The serving side of the rpcs that carry a body (grpc-server.ts admits and signs). Each
 * call gets a local stream whose other end goes to the handler with the request.
 * Replica.Write: the first frame is the head, authenticated as a unary request is (the signature
 * covers the head's bytes); the frames after it go to the local stream, paused while it has no
 * credit; the handler's Result is the answer, and a handler that answers (or cancels its source)
 * before the body's end stops the caller at once.
 * Replica.Read: the request is authenticated as a unary one; the handler's Result goes first, in
 * the head frame (the answer's signature covers it), then, after an ok, the transport requests
 * the request's `range` from the handler's stream and sends its bytes as frames. A failure has
 * no bytes. Either way a caller that goes away, or the deadline, fails the local stream at once. */
import {
  status,
  type Deadline,
  type Metadata,
  type sendUnaryData,
  type ServerReadableStream,
  type ServerWritableStream,
} from '@grpc/grpc-js'
import type { StreamHandle } from '../../protocol/actor.js'
import type { BodyRange, PeerMethod } from '../../protocol/cluster.js'
import { fail, type ErrorCode, type Result } from '../../protocol/errors.js'
import { openStream, PortSink, PortSource } from '../stream-port.js'
import { BodyReceiver, sendBody, type Frame } from './body-frames.js'
import { PEER_MESSAGE_BYTES_MAX, type JsonMessage } from './grpc-service.js'

/** How long a Write may go without its head: until then no check has run, so the call must not
 * hold a stream for its whole deadline. */
const HEAD_WAIT_MS = 10_000

/** Why a call is refused before dispatch, as a gRPC status. */
export interface Refusal {
  code: status
  details: string
}

/** A call's answer, and the call's nonce, which the answer's signature binds it to. */
export interface AnswerBytes {
  bytes: Buffer
  nonce: string
}

export type Sign = (method: PeerMethod, answer: AnswerBytes) => Metadata

/** A call that passed the checks: who called, its request as its schema parsed it, and its place
 * in progress. */
export interface Admitted {
  node: string
  nonce: string
  body: unknown
  release(): void
}

/** What the server lends the body rpcs: its checks, its dispatch, its signature, its deadlines. */
export interface BodyServing {
  admit(method: PeerMethod, metadata: Metadata, body: Buffer): Refusal | Admitted
  dispatch(
    method: PeerMethod,
    from: string,
    body: unknown,
    deadlineMs: number,
    stream: StreamHandle,
  ): Promise<Result<unknown>>
  sign: Sign
  deadlineOf(call: { getDeadline(): Deadline }): number
}

/** The code of a local stream failed because the call ended early: its deadline, or the caller. */
function endedEarly(deadlineMs: number): ErrorCode {
  return Date.now() >= deadlineMs ? 'timeout' : 'unavailable'
}

/** A Result as an answer's bytes; one over the message bound is the handler's fault. */
function answerBytes(method: PeerMethod, result: Result<unknown>): Buffer {
  const bytes = Buffer.from(JSON.stringify(result), 'utf8')
  if (bytes.length <= PEER_MESSAGE_BYTES_MAX - 64) return bytes
  const tooLong = fail('internal', `${method}: an answer of ${bytes.length} bytes`)
  return Buffer.from(JSON.stringify(tooLong), 'utf8')
}

export function bodyWriteHandler(method: PeerMethod, serving: BodyServing) {
  return (
    call: ServerReadableStream<Frame, JsonMessage>,
    callback: sendUnaryData<JsonMessage>,
  ): void => {
    let admitted: Admitted | null = null
    let receiver: BodyReceiver | null = null
    let answered = false
    let deadlineMs = Number.POSITIVE_INFINITY
    let timer = setTimeout(() => {
      refuse({ code: status.DEADLINE_EXCEEDED, details: 'no head in time' })
    }, HEAD_WAIT_MS)
    const finish = (): boolean => {
      if (answered) return false
      answered = true
      clearTimeout(timer)
      admitted?.release()
      return true
    }
    const refuse = (refusal: Refusal): void => {
      if (finish()) callback(refusal)
    }
    const answer = (result: Result<unknown>): void => {
      const nonce = admitted?.nonce
      if (nonce === undefined || !finish()) return
      // Bytes still coming are not wanted any more: the handler's source fails if it still reads.
      receiver?.fail(result.ok ? 'unavailable' : result.code, "answered before the body's end")
      const bytes = answerBytes(method, result)
      call.sendMetadata(serving.sign(method, { bytes, nonce }))
      callback(null, { body: bytes })
    }
    const start = (head: Buffer): void => {
      clearTimeout(timer)
      const outcome = serving.admit(method, call.metadata, head)
      if (!('node' in outcome)) return refuse(outcome)
      admitted = outcome
      deadlineMs = serving.deadlineOf(call)
      const [sinkEnd, sourceEnd] = openStream()
      const onFailure = (error: { code: ErrorCode; message: string }): void => {
        answer(fail(error.code, error.message))
      }
      receiver = new BodyReceiver(new PortSink(sinkEnd), call, onFailure)
      const late = receiver
      timer = setTimeout(
        () => {
          late.fail('timeout', `${method}: the body did not arrive by the deadline`)
          answer(fail('timeout', `${method}: not done by the deadline`))
        },
        Math.max(0, deadlineMs - Date.now()),
      )
      void serving.dispatch(method, outcome.node, outcome.body, deadlineMs, sourceEnd).then(answer)
    }
    call.on('data', (frame: Frame) => {
      if (receiver !== null) return receiver.take(frame)
      if (answered) return
      if (frame.kind === 'head' && frame.head !== undefined) return start(frame.head)
      refuse({ code: status.INVALID_ARGUMENT, details: 'the call did not start with its head' })
    })
    const gone = (): void => {
      receiver?.fail(endedEarly(deadlineMs), `${method}: the caller went away`)
      finish()
    }
    call.on('cancelled', gone)
    call.on('error', gone)
  }
}

export function bodyReadHandler(method: PeerMethod, serving: BodyServing) {
  return (call: ServerWritableStream<JsonMessage, Frame>): void => {
    void serveRead(method, serving, call)
  }
}

async function serveRead(
  method: PeerMethod,
  serving: BodyServing,
  call: ServerWritableStream<JsonMessage, Frame>,
): Promise<void> {
  const admitted = serving.admit(method, call.metadata, call.request.body)
  if (!('node' in admitted)) {
    call.emit('error', admitted)
    return
  }
  // Its schema checked the range (protocol/wire/replica.ts).
  const range = (admitted.body as { range?: BodyRange }).range ?? null
  const deadlineMs = serving.deadlineOf(call)
  const [sinkEnd, sourceEnd] = openStream()
  const source = new PortSource(sourceEnd)
  let stop = (): void => undefined
  const stopped = new Promise<void>((resolve) => (stop = resolve))
  const stopWith = (code: ErrorCode, detail: string): void => {
    source.cancel(code, detail)
    stop()
  }
  call.on('cancelled', () => stopWith(endedEarly(deadlineMs), `${method}: the caller went away`))
  const timer = setTimeout(
    () => {
      stopWith('timeout', `${method}: not done by the deadline`)
      call.emit('error', { code: status.DEADLINE_EXCEEDED, details: 'not done by the deadline' })
    },
    Math.max(0, deadlineMs - Date.now()),
  )
  try {
    const result = await serving.dispatch(method, admitted.node, admitted.body, deadlineMs, sinkEnd)
    if (call.cancelled) return
    const bytes = answerBytes(method, result)
    call.sendMetadata(serving.sign(method, { bytes, nonce: admitted.nonce }))
    call.write({ head: bytes })
    if (!result.ok) {
      source.cancel(result.code, result.detail)
      call.end()
      return
    }
    if (range !== null) source.request(range.start, range.end)
    await sendBody(source, call, stopped)
  } finally {
    clearTimeout(timer)
    admitted.release()
  }
}
