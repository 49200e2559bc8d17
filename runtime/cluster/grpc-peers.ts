/** @module `Peers` over gRPC: how this node's actors call other nodes. One client per peer
 * address, made at its first call and kept for the next ones, at most PEER_CLIENTS_MAX of them
 * (the least recently used is closed past that). Every call is signed (call-auth.ts), carries its
 * deadline as the gRPC deadline, and has a local timer a little later as a backstop. A call never
 * throws: a transport failure becomes `unavailable`, `timeout` or `busy` (grpc-service.ts), an
 * answer whose signature does not verify, that another node than the one called gave, or that
 * does not fit its method's schema (protocol/wire/peer-methods.ts; logged with the first issue's
 * path) is `unavailable`, and the handler's own Result comes back as its schema parsed it, with
 * the id of the node that answered. The partition filter cuts peers by id, as a cut network
 * would: a call to one fails at once, and an answer from one (a seed called by address) is
 * dropped. Calls that carry a body (openWrite, callForBody) are checked and signed the same way,
 * the head standing for the request (body-calls.ts moves the bytes); any failure of theirs fails
 * the body's sink or local stream too. */
import assert from 'node:assert/strict'
import { Client, Metadata, type ServiceError as GrpcError } from '@grpc/grpc-js'
import type { Logger, StreamHandle } from '../../protocol/actor.js'
import type {
  BodyRange,
  BodyReadingMethod,
  BodySendingMethod,
  PeerMethod,
  PeerResult,
  Peers,
  PeerTarget,
  PeerWrite,
} from '../../protocol/cluster.js'
import { fail, type ErrorCode, type Result } from '../../protocol/errors.js'
import { checkPeerAnswer } from '../../protocol/wire/peer-methods.js'
import { PortSink } from '../stream-port.js'
import {
  DEADLINE_BACKSTOP_MS,
  readingCall,
  sendingCall,
  type Answer,
  type SignedCall,
} from './body-calls.js'
import { CALL_METADATA, signCall, verifyAnswer, type Signer } from './call-auth.js'
import { clusterKey } from './cluster-key.js'
import { FrameSink } from './frame-sink.js'
import {
  GRPC_OPTIONS,
  PEER_CALL_MS_MAX,
  PEER_MESSAGE_BYTES_MAX,
  rpcOf,
  statusCode,
  STREAMED_ANSWER_BYTES_MAX,
  type JsonMessage,
} from './grpc-service.js'
import { channelCredentials, channelTlsOptions, readGrpcTls, type GrpcTls } from './grpc-tls.js'

/** Peer addresses with an open client at once: a cluster's members and seeds, with room. */
export const PEER_CLIENTS_MAX = 64

export interface GrpcPeersOptions extends Signer {
  tls: GrpcTls | null
  /** Where an answer refused by its schema is told. */
  log: Logger
  clientsMax?: number
}

/** A call checked and signed, with the nonce its answer must be bound to. */
type Prepared = SignedCall & { nonce: string }

export class GrpcPeers implements Peers {
  private readonly clients = new Map<string, Client>()
  private partitioned: ReadonlySet<string> = new Set()
  private closed = false

  constructor(private readonly options: GrpcPeersOptions) {
    assert(Number.isInteger(options.clientsMax ?? PEER_CLIENTS_MAX))
  }

  /** From an actor's configuration: SVC_CLUSTER_NAME, SVC_NODE_ID, the cluster key and the
   * SVC_GRPC_TLS_* files. */
  static fromConfig(config: Readonly<Record<string, string>>, log: Logger): GrpcPeers {
    const clusterName = config['SVC_CLUSTER_NAME'] ?? ''
    const nodeId = config['SVC_NODE_ID'] ?? ''
    assert(clusterName !== '' && nodeId !== '', 'cluster mode needs a cluster name and node id')
    const { key } = clusterKey(config)
    return new GrpcPeers({ clusterName, nodeId, key, tls: readGrpcTls(config), log })
  }

  /** From now on, calls to these node ids fail and their answers are dropped; [] heals. */
  setPartitioned(ids: readonly string[]): void {
    this.partitioned = new Set(ids)
  }

  async call<T>(
    to: PeerTarget,
    method: PeerMethod,
    body: object,
    deadlineMs: number,
  ): Promise<PeerResult<T>> {
    const shape = rpcOf(method).shape
    assert(shape === 'unary' || shape === 'chunked-answer', `${method} carries a body`)
    const prepared = this.prepare(to, method, body, deadlineMs)
    if (!('nonce' in prepared)) return prepared
    const answer = await this.exchange(prepared)
    if (!('bytes' in answer)) return answer
    return this.accept<T>(to, method, body, prepared.nonce, answer)
  }

  openWrite<T>(
    to: PeerTarget,
    method: BodySendingMethod,
    body: object,
    deadlineMs: number,
  ): PeerWrite<T> {
    const prepared = this.prepare(to, method, body, deadlineMs)
    if (!('nonce' in prepared)) {
      // `prepare` answers only failures; its type allows an ok.
      const { code, detail } = prepared.ok ? { code: 'internal' as const, detail: '' } : prepared
      return { sink: FrameSink.refused(code, detail), answer: Promise.resolve(fail(code, detail)) }
    }
    const client = this.clientFor(to.grpcAddr)
    const call = sendingCall(client, rpcOf(method).definition, prepared)
    const answer = call.answer.then((answer) => {
      const result =
        'bytes' in answer ? this.accept<T>(to, method, body, prepared.nonce, answer) : answer
      // The peer takes no more bytes: the writer learns why (after the body's end, a no-op).
      if (result.ok)
        call.sink.stop('unavailable', `${method}: the peer answered before the body's end`)
      else call.sink.stop(result.code, result.detail)
      return result
    })
    return { sink: call.sink, answer }
  }

  async callForBody<T>(
    to: PeerTarget,
    method: BodyReadingMethod,
    body: object & { range?: BodyRange },
    sink: StreamHandle,
    deadlineMs: number,
  ): Promise<PeerResult<T>> {
    const bytes = new PortSink(sink)
    const prepared = this.prepare(to, method, body, deadlineMs)
    if (!('nonce' in prepared)) {
      if (!prepared.ok) bytes.abort(prepared.code, prepared.detail)
      return prepared
    }
    const client = this.clientFor(to.grpcAddr)
    const accept = (head: Answer): PeerResult<T> =>
      this.accept<T>(to, method, body, prepared.nonce, head)
    return readingCall(client, rpcOf(method).definition, prepared, bytes, accept)
  }

  /** The checks every call starts with (closed, partitioned, the request's size, the deadline),
   * then its signature; a failure is the call's answer. */
  private prepare(
    to: PeerTarget,
    method: PeerMethod,
    body: object,
    deadlineMs: number,
  ): Prepared | PeerResult<never> {
    if (this.closed) return fail('unavailable', 'the transport is closed')
    if (to.id !== null && this.partitioned.has(to.id)) {
      return fail('unavailable', `partitioned from ${to.id}`)
    }
    const request = Buffer.from(JSON.stringify(body), 'utf8')
    if (request.length > PEER_MESSAGE_BYTES_MAX) {
      return fail('invalid_argument', `a request of ${request.length} bytes is over the bound`)
    }
    const nowMs = Date.now()
    if (deadlineMs <= nowMs) return fail('timeout', `${method}: deadline already past`)
    const headers = signCall(this.options, method, request, nowMs)
    const metadata = new Metadata()
    for (const [name, value] of Object.entries(headers)) metadata.set(name, value)
    return {
      address: to.grpcAddr,
      method,
      request,
      metadata,
      deadlineMs: Math.min(deadlineMs, nowMs + PEER_CALL_MS_MAX),
      nonce: headers[CALL_METADATA.nonce],
    }
  }

  /** Closes every client; later calls answer `unavailable`. */
  close(): void {
    this.closed = true
    for (const client of this.clients.values()) client.close()
    this.clients.clear()
  }

  /** Checks who answered and that the answer is theirs, then reads the handler's Result and checks
   * it against the schema of what `request` asked. */
  private accept<T>(
    to: PeerTarget,
    method: PeerMethod,
    request: object,
    nonce: string,
    answer: Answer,
  ): PeerResult<T> {
    const node = answer.metadata?.get(CALL_METADATA.node)[0]
    const mac = answer.metadata?.get(CALL_METADATA.mac)[0]
    if (typeof node !== 'string' || typeof mac !== 'string') {
      return fail<T>('unavailable', `${to.grpcAddr} answered unsigned`)
    }
    if (!verifyAnswer(this.options, node, method, nonce, answer.bytes, mac)) {
      return fail<T>('unavailable', `${to.grpcAddr} answered with a bad signature`)
    }
    if (this.partitioned.has(node)) return fail<T>('unavailable', `partitioned from ${node}`)
    if (to.id !== null && node !== to.id) {
      return fail<T>('unavailable', `${to.grpcAddr} is ${node}, not ${to.id}`)
    }
    let parsed: unknown
    try {
      parsed = JSON.parse(answer.bytes.toString('utf8'))
    } catch {
      return fail<T>('unavailable', `${node} answered malformed JSON`)
    }
    const checked = checkPeerAnswer(method, request, parsed)
    if (!checked.ok) {
      this.options.log.warn({ method, node, issue: checked.issue }, 'malformed peer answer')
      return fail<T>('unavailable', `${method}: ${node} answered malformed: ${checked.issue}`)
    }
    return { ...(checked.value as Result<T>), answeredBy: node }
  }

  /** One gRPC call, unary or streamed, settled exactly once: by gRPC or by the backstop. */
  private exchange(prepared: Prepared): Promise<Answer | PeerResult<never>> {
    const { address, method, request, metadata, deadlineMs } = prepared
    const rpc = rpcOf(method).definition
    const client = this.clientFor(address)
    const options = { deadline: new Date(deadlineMs) }
    return new Promise((resolve) => {
      let settled = false
      let serverMetadata: Metadata | null = null
      const settle = (outcome: Answer | PeerResult<never>): void => {
        if (settled) return
        settled = true
        clearTimeout(backstop)
        resolve(outcome)
      }
      const failed = (error: GrpcError): void => {
        const code: ErrorCode = statusCode(error.code)
        settle(fail(code, `${method} to ${address}: ${error.details || error.message}`))
      }
      const argument: JsonMessage = { body: request }
      const serialize = rpc.requestSerialize
      const args = [
        rpc.path,
        serialize,
        rpc.responseDeserialize,
        argument,
        metadata,
        options,
      ] as const
      let cancel: () => void
      if (rpc.responseStream) {
        const call = client.makeServerStreamRequest<JsonMessage, JsonMessage>(...args)
        const chunks: Buffer[] = []
        let received = 0
        call.on('metadata', (received: Metadata) => (serverMetadata = received))
        call.on('data', (chunk: JsonMessage) => {
          received += chunk.body.length
          if (received <= STREAMED_ANSWER_BYTES_MAX) chunks.push(chunk.body)
          else {
            call.cancel()
            settle(fail('unavailable', `${method}: the answer is over the bound`))
          }
        })
        call.on('error', failed)
        call.on('end', () => {
          settle({ bytes: Buffer.concat(chunks), metadata: serverMetadata })
        })
        cancel = () => call.cancel()
      } else {
        const call = client.makeUnaryRequest<JsonMessage, JsonMessage>(...args, (error, reply) => {
          if (error !== null) failed(error)
          else settle({ bytes: reply?.body ?? Buffer.alloc(0), metadata: serverMetadata })
        })
        call.on('metadata', (received: Metadata) => (serverMetadata = received))
        cancel = () => call.cancel()
      }
      const backstop = setTimeout(
        () => {
          cancel()
          settle(fail('timeout', `${method} to ${address}: no answer by the deadline`))
        },
        Math.max(0, deadlineMs - Date.now()) + DEADLINE_BACKSTOP_MS,
      )
    })
  }

  /** The address's client, made when first needed; the least recently used one closes past the
   * bound (a call still on it fails `unavailable`, as a peer gone would). */
  private clientFor(address: string): Client {
    let client = this.clients.get(address)
    if (client !== undefined) this.clients.delete(address)
    else {
      const { tls } = this.options
      client = new Client(address, channelCredentials(tls), {
        ...GRPC_OPTIONS,
        ...channelTlsOptions(tls),
      })
    }
    this.clients.set(address, client)
    const clientsMax = this.options.clientsMax ?? PEER_CLIENTS_MAX
    for (const [oldest, stale] of this.clients) {
      if (this.clients.size <= clientsMax) break
      stale.close()
      this.clients.delete(oldest)
    }
    return client
  }

  /** Addresses with an open client, least recently used first (for tests and metrics). */
  get clientAddresses(): string[] {
    return [...this.clients.keys()]
  }
}
