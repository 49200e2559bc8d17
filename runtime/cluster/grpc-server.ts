/** @module The gRPC server of the node-to-node transport. It serves every rpc of cluster.proto and,
 * for each call, in this order and before anything reaches a handler: authenticates it
 * (call-auth.ts; a failure answers UNAUTHENTICATED with a short reason and nothing else), drops a
 * call from a partitioned peer with UNAVAILABLE, refuses one past GRPC_CALLS_MAX in progress with
 * RESOURCE_EXHAUSTED, and refuses a body that is not JSON, or that does not fit its method's
 * schema (protocol/wire/peer-methods.ts; logged with the first issue's path), with
 * INVALID_ARGUMENT. Then `dispatch` runs with the body as its schema parsed it and the call's
 * deadline (less a margin for the way back) and its Result is the answer's body, signed with this
 * node's id. A Result too long for one message is a fault of the handler and answers `internal`,
 * except on streamed rpcs, whose answer goes in chunks. Rpcs that carry a body go through the same
 * checks on their head (body-server.ts) and hand the handler a local stream. The address in use
 * (or any other bind failure of the environment) is an EnvironmentError naming
 * SVC_NODE_GRPC_ADDR. */
import {
  Metadata,
  Server,
  status,
  type Deadline,
  type sendUnaryData,
  type ServerUnaryCall,
  type ServerWritableStream,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js'
import type { Logger, StreamHandle } from '../../protocol/actor.js'
import type { PeerMethod } from '../../protocol/cluster.js'
import { fail, type Result } from '../../protocol/errors.js'
import { grpcBindFailure } from '../listen-failure.js'
import { withTimeout } from '../../protocol/timing.js'
import { checkPeerRequest } from '../../protocol/wire/peer-methods.js'
import {
  bodyReadHandler,
  bodyWriteHandler,
  type Admitted,
  type AnswerBytes,
  type BodyServing,
  type Refusal,
  type Sign,
} from './body-server.js'
import { answerMac, CALL_METADATA, NonceWindow, verifyCall, type Signer } from './call-auth.js'
import {
  ANSWER_CHUNK_BYTES,
  CLUSTER_SERVICES,
  GRPC_OPTIONS,
  PEER_CALL_MS_MAX,
  PEER_MESSAGE_BYTES_MAX,
  rpcOf,
  STREAMED_ANSWER_BYTES_MAX,
  type JsonMessage,
} from './grpc-service.js'
import { serverCredentials, type GrpcTls } from './grpc-tls.js'
import { openServerWindows } from './http2-windows.js'

/** Calls in progress at once; one more is refused at once (the caller sees `busy`). */
export const GRPC_CALLS_MAX = 256
/** Taken off a call's deadline for the handler, so its answer can still travel back in time. */
const DEADLINE_MARGIN_MS = 50
/** The deadline of a call that came without one (every call of ours has one). */
const DEFAULT_CALL_MS = 30_000

export interface GrpcServerOptions extends Signer {
  /** host:port; port 0 takes a free one (tests). */
  address: string
  tls: GrpcTls | null
  isPartitioned(from: string): boolean
  /** Where a request refused by its schema is told. */
  log: Logger
  /** Runs the call's handler, with the body its method's schema let through; `stream` is the
   * local stream of a call that carries a body. */
  dispatch(
    method: PeerMethod,
    from: string,
    body: unknown,
    deadlineMs: number,
    stream?: StreamHandle,
  ): Promise<Result<unknown>>
  callsMax?: number
}

export interface GrpcServer {
  port: number
  /** Stops taking calls and lets those in progress finish for up to `graceMs`, then cuts them. */
  shutdown(graceMs: number): Promise<void>
}

type AnyCall = ServerUnaryCall<JsonMessage, JsonMessage> | ServerWritableStream<JsonMessage, never>

export async function startGrpcServer(options: GrpcServerOptions): Promise<GrpcServer> {
  const server = new Server(GRPC_OPTIONS)
  const nonces = new NonceWindow()
  const callsMax = options.callsMax ?? GRPC_CALLS_MAX
  let inProgress = 0

  /** Authenticates, filters and bounds one call before it runs; an admitted call holds one of
   * the places in progress until `release`. */
  function admit(method: PeerMethod, metadata: Metadata, body: Buffer): Refusal | Admitted {
    const headers: Record<string, string | undefined> = {}
    for (const name of Object.values(CALL_METADATA)) {
      const value = metadata.get(name)[0]
      headers[name] = typeof value === 'string' ? value : undefined
    }
    const verdict = verifyCall(options, headers, method, body, Date.now(), nonces)
    if (!verdict.ok) {
      const code = verdict.refusal === 'busy' ? status.RESOURCE_EXHAUSTED : status.UNAUTHENTICATED
      return { code, details: verdict.reason }
    }
    if (options.isPartitioned(verdict.node)) {
      return { code: status.UNAVAILABLE, details: 'partitioned' }
    }
    if (inProgress >= callsMax) return { code: status.RESOURCE_EXHAUSTED, details: 'busy' }
    let parsed: unknown
    try {
      parsed = JSON.parse(body.toString('utf8'))
    } catch {
      return { code: status.INVALID_ARGUMENT, details: 'the body is not JSON' }
    }
    const checked = checkPeerRequest(method, parsed)
    if (!checked.ok) {
      options.log.warn(
        { method, from: verdict.node, issue: checked.issue },
        'malformed peer request',
      )
      return { code: status.INVALID_ARGUMENT, details: `${method}: ${checked.issue}` }
    }
    inProgress++
    let released = false
    const release = (): void => {
      if (!released) inProgress--
      released = true
    }
    return { node: verdict.node, nonce: verdict.nonce, body: checked.value, release }
  }

  /** Admits one call, runs it, and answers its Result; or answers the refusal. */
  async function serve(method: PeerMethod, call: AnyCall): Promise<Refusal | AnswerBytes> {
    const admitted = admit(method, call.metadata, call.request.body)
    if (!('node' in admitted)) return admitted
    try {
      const result = await dispatchSafely(method, admitted.node, admitted.body, deadlineOf(call))
      return { bytes: Buffer.from(JSON.stringify(result), 'utf8'), nonce: admitted.nonce }
    } finally {
      admitted.release()
    }
  }

  async function dispatchSafely(
    method: PeerMethod,
    from: string,
    body: unknown,
    deadlineMs: number,
    stream?: StreamHandle,
  ): Promise<Result<unknown>> {
    try {
      return await options.dispatch(method, from, body, deadlineMs, stream)
    } catch (error) {
      // dispatch answers with Results; a throw is our bug, told to the caller as `internal`.
      return fail('internal', `${method} failed: ${String(error)}`)
    }
  }

  /** The answer's metadata: this node's id, and the answer's signature. */
  function signed(method: PeerMethod, answer: AnswerBytes): Metadata {
    const metadata = new Metadata()
    metadata.set(CALL_METADATA.node, options.nodeId)
    metadata.set(CALL_METADATA.mac, answerMac(options, method, answer.nonce, answer.bytes))
    return metadata
  }

  const bodies: BodyServing = { admit, dispatch: dispatchSafely, sign: signed, deadlineOf }
  for (const [service, definition] of CLUSTER_SERVICES.services) {
    const implementation: UntypedServiceImplementation = {}
    for (const rpc of Object.keys(definition)) {
      const method = `${service}.${rpc}` as PeerMethod
      implementation[rpc] = handlerOf(method, serve, signed, bodies)
    }
    server.addService(definition, implementation)
  }

  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(options.address, serverCredentials(options.tls), (error, bound) => {
      if (error === null) resolve(bound)
      else reject(grpcBindFailure(error, options.address))
    })
  })
  openServerWindows(server)
  return { port, shutdown: (graceMs) => shutdown(server, graceMs) }
}

type Serve = (method: PeerMethod, call: AnyCall) => Promise<Refusal | AnswerBytes>

function handlerOf(method: PeerMethod, serve: Serve, sign: Sign, bodies: BodyServing) {
  switch (rpcOf(method).shape) {
    case 'unary':
      return unary(method, serve, sign)
    case 'chunked-answer':
      return streamed(method, serve, sign)
    case 'sends-body':
      return bodyWriteHandler(method, bodies)
    case 'reads-body':
      return bodyReadHandler(method, bodies)
  }
}

function unary(method: PeerMethod, serve: Serve, sign: Sign) {
  return (
    call: ServerUnaryCall<JsonMessage, JsonMessage>,
    callback: sendUnaryData<JsonMessage>,
  ): void => {
    void serve(method, call).then((outcome) => {
      if (!('bytes' in outcome)) return callback(outcome)
      let answer = outcome
      if (answer.bytes.length > PEER_MESSAGE_BYTES_MAX - 64) {
        const tooLong = fail('internal', `${method}: an answer of ${answer.bytes.length} bytes`)
        answer = { ...answer, bytes: Buffer.from(JSON.stringify(tooLong), 'utf8') }
      }
      call.sendMetadata(sign(method, answer))
      callback(null, { body: answer.bytes })
    })
  }
}

function streamed(method: PeerMethod, serve: Serve, sign: Sign) {
  return (call: ServerWritableStream<JsonMessage, JsonMessage>): void => {
    void serve(method, call).then((outcome) => {
      if (!('bytes' in outcome)) {
        call.emit('error', outcome)
        return
      }
      let answer = outcome
      if (answer.bytes.length > STREAMED_ANSWER_BYTES_MAX) {
        const tooLong = fail('internal', `${method}: an answer of ${answer.bytes.length} bytes`)
        answer = { ...answer, bytes: Buffer.from(JSON.stringify(tooLong), 'utf8') }
      }
      call.sendMetadata(sign(method, answer))
      void writeChunks(call, answer.bytes)
    })
  }
}

/** Writes the answer in chunks, each after the last was taken (the stream's backpressure); a
 * call the client cancelled (or whose deadline passed) stops the writing. */
async function writeChunks(
  call: ServerWritableStream<JsonMessage, JsonMessage>,
  bytes: Buffer,
): Promise<void> {
  for (let offset = 0; offset < bytes.length && !call.cancelled; offset += ANSWER_CHUNK_BYTES) {
    const chunk = { body: bytes.subarray(offset, offset + ANSWER_CHUNK_BYTES) }
    if (call.write(chunk)) continue
    await new Promise<void>((resolve) => {
      const done = (): void => {
        call.off('drain', done)
        call.off('cancelled', done)
        resolve()
      }
      call.once('drain', done)
      call.once('cancelled', done)
    })
  }
  call.end()
}

/** The handler's deadline: the caller's, less the margin, on this machine's clock. */
function deadlineOf(call: { getDeadline(): Deadline }): number {
  const deadline = call.getDeadline()
  const deadlineMs = deadline instanceof Date ? deadline.getTime() : Number(deadline)
  if (!Number.isFinite(deadlineMs)) return Date.now() + DEFAULT_CALL_MS
  return Math.min(deadlineMs, Date.now() + PEER_CALL_MS_MAX) - DEADLINE_MARGIN_MS
}

async function shutdown(server: Server, graceMs: number): Promise<void> {
  const drained = new Promise<void>((resolve, reject) => {
    server.tryShutdown((error) => (error === undefined ? resolve() : reject(error)))
  })
  try {
    await withTimeout(drained, graceMs, 'draining gRPC calls')
  } catch {
    server.forceShutdown()
  }
}
