/** @module The calling side of the rpcs that carry a body (grpc-peers.ts makes and signs them).
 * `sendingCall` (Replica.Write): the head frame, then the bytes the caller writes to a FrameSink
 * (frame-sink.ts) in this thread; the answer is the handler's Result, and an answer before the
 * body's end fails the sink. The sink's abort goes to the peer as an abort frame, and the call
 * is cancelled ABORT_GRACE_MS later if the peer has not answered by then. `readingCall`
 * (Replica.Read): the first frame is the handler's Result, checked by the caller's `accept`; the
 * frames after an ok go to the local sink, and a cancelled read cancels the call. Every failure
 * (the peer gone, the deadline, a bad frame) fails the sink or local stream and the call
 * together; each call is settled once, by gRPC or by a backstop timer DEADLINE_BACKSTOP_MS past
 * its deadline. */
import assert from 'node:assert/strict'
import type { Client, Metadata, ServiceError as GrpcError } from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { PeerMethod, PeerResult } from '../../protocol/cluster.js'
import { fail, type ErrorCode } from '../../protocol/errors.js'
import type { PortSink } from '../stream-port.js'
import { BodyReceiver, type Frame } from './body-frames.js'
import { FrameSink } from './frame-sink.js'
import { statusCode, type JsonMessage } from './grpc-service.js'

/** How long after its deadline a call is abandoned if gRPC has not ended it: the backstop. */
export const DEADLINE_BACKSTOP_MS = 1_000
/** How long a peer has to take an abort frame and answer before the call is cancelled. */
const ABORT_GRACE_MS = 1_000

/** What came back from the server, before it is checked. */
export interface Answer {
  bytes: Buffer
  metadata: Metadata | null
}

/** A signed call ready to go: its request bytes, metadata and absolute deadline. */
export interface SignedCall {
  address: string
  method: PeerMethod
  request: Buffer
  metadata: Metadata
  deadlineMs: number
}

/** Settles the call's promise once; `finish` (the call ended) clears the backstop, which would
 * otherwise fire DEADLINE_BACKSTOP_MS past the deadline: `onBackstop`, then a `timeout`. */
function settledOnce<T>(
  call: SignedCall,
  onBackstop: () => void,
  run: (settle: (outcome: T | PeerResult<never>) => void, finish: () => void) => void,
): Promise<T | PeerResult<never>> {
  return new Promise((resolve) => {
    let settled = false
    const settle = (outcome: T | PeerResult<never>): void => {
      if (settled) return
      settled = true
      resolve(outcome)
    }
    const backstop = setTimeout(
      () => {
        onBackstop()
        settle(fail('timeout', `${call.method} to ${call.address}: not done by the deadline`))
      },
      Math.max(0, call.deadlineMs - Date.now()) + DEADLINE_BACKSTOP_MS,
    )
    // A backstop waits for nothing the process needs: it must not keep the process alive.
    backstop.unref()
    run(settle, () => clearTimeout(backstop))
  })
}

function failureOfCall(call: SignedCall, error: GrpcError): PeerResult<never> {
  const code: ErrorCode = statusCode(error.code)
  return fail(code, `${call.method} to ${call.address}: ${error.details || error.message}`)
}

/** A Write call opened: the sink the caller writes the body to, and the peer's answer (or a
 * failure), which the caller checks and then gives the sink (`stop`). */
export interface SendingCall {
  sink: FrameSink
  answer: Promise<Answer | PeerResult<never>>
}

/** Sends the head now; the bytes follow as the caller writes them to the returned sink. A
 * failure of the call fails the sink; the caller's abort is the answer, and the call is
 * cancelled ABORT_GRACE_MS later if the peer has not answered by then. */
export function sendingCall(
  client: Client,
  rpc: MethodDefinition<JsonMessage, JsonMessage>,
  call: SignedCall,
): SendingCall {
  let sink: FrameSink | null = null
  let cancel = (): void => undefined
  const onBackstop = (): void => {
    cancel()
    sink?.stop('timeout', `${call.method}: not done by the deadline`)
  }
  const answer = settledOnce<Answer>(call, onBackstop, (settle, finish) => {
    let serverMetadata: Metadata | null = null
    let grace: NodeJS.Timeout | undefined
    // The sink encodes each frame as it is written (frame-sink.ts): gRPC gets its bytes.
    const stream = client.makeClientStreamRequest<Buffer, JsonMessage>(
      rpc.path,
      (bytes: Buffer) => bytes,
      rpc.responseDeserialize,
      call.metadata,
      { deadline: new Date(call.deadlineMs) },
      (error, reply) => {
        finish()
        clearTimeout(grace)
        if (error !== null) {
          const failure = failureOfCall(call, error)
          if (!failure.ok) sink?.stop(failure.code, failure.detail)
          return settle(failure)
        }
        settle({ bytes: reply?.body ?? Buffer.alloc(0), metadata: serverMetadata })
      },
    )
    cancel = () => stream.cancel()
    // Failures arrive through the callback; a write racing the call's end is no failure of ours.
    stream.on('error', () => undefined)
    stream.on('metadata', (received: Metadata) => (serverMetadata = received))
    const encode = rpc.requestSerialize as unknown as (frame: Frame) => Buffer
    // The writer failed the body: its code is the answer, and the peer has it in the frame.
    sink = new FrameSink(stream, encode, (code, detail) => {
      settle(fail(code, detail))
      grace = setTimeout(cancel, ABORT_GRACE_MS)
    })
    stream.write(encode({ head: call.request }))
  })
  // settledOnce ran the executor before returning: the sink is made.
  assert(sink !== null)
  return { sink, answer }
}

/** Asks for the head and then the body; `accept` checks the head (its signature, its Result).
 * Resolves with the accepted head, or a failure, which `sink`'s reader then has too. */
export function readingCall<T>(
  client: Client,
  rpc: MethodDefinition<JsonMessage, JsonMessage>,
  call: SignedCall,
  sink: PortSink,
  accept: (head: Answer) => PeerResult<T>,
): Promise<PeerResult<T>> {
  let cancel = (): void => undefined
  const onBackstop = (): void => {
    cancel()
    sink.abort('timeout', `${call.method}: not done by the deadline`)
  }
  return settledOnce<PeerResult<T>>(call, onBackstop, (settle, finish) => {
    let serverMetadata: Metadata | null = null
    let receiver: BodyReceiver | null = null
    const stream = client.makeServerStreamRequest<JsonMessage, Frame>(
      rpc.path,
      rpc.requestSerialize,
      rpc.responseDeserialize as unknown as (bytes: Buffer) => Frame,
      { body: call.request },
      call.metadata,
      { deadline: new Date(call.deadlineMs) },
    )
    cancel = () => stream.cancel()
    stream.on('status', finish)
    const failWith = (code: ErrorCode, detail: string): void => {
      stream.cancel()
      if (receiver === null) sink.abort(code, detail)
      else receiver.fail(code, detail)
      settle(fail(code, detail))
    }
    stream.on('metadata', (received: Metadata) => (serverMetadata = received))
    stream.on('data', (frame: Frame) => {
      if (receiver !== null) return receiver.take(frame)
      if (frame.kind !== 'head' || frame.head === undefined) {
        return failWith('unavailable', `${call.method}: the answer did not start with its head`)
      }
      const head = accept({ bytes: frame.head, metadata: serverMetadata })
      if (!head.ok) {
        stream.cancel()
        sink.abort(head.code, head.detail)
        return settle(head)
      }
      receiver = new BodyReceiver(sink, stream, (error) => failWith(error.code, error.message))
      settle(head)
    })
    stream.on('error', (error: GrpcError) => {
      const failure = failureOfCall(call, error)
      if (!failure.ok) failWith(failure.code, failure.detail)
    })
    stream.on('end', () => {
      if (receiver === null || !receiver.finished) {
        failWith('unavailable', `${call.method}: the answer ended before the body's end`)
      }
    })
    // The reader cancelled (or went away): the call stops at once.
    void sink.whenCancelled().then((error) => failWith(error.code, error.message))
  })
}
