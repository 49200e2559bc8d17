/** @module What both ends of the gRPC transport share: the services of protocol/cluster.proto,
 * loaded at run time with @grpc/proto-loader, one rpc per PeerMethod; the bounds every channel and
 * server takes (4 MiB messages each way, keepalive every 10 s); and how a gRPC status becomes an
 * ErrorCode. Every rpc's serializers count the bytes they make (peer-bytes.ts), on both ends.
 * The .proto is not compiled into dist/: it is read from protocol/ beside dist/ (the package
 * root, three folders above this compiled module), so the source file is the one copy and a
 * deployment ships protocol/cluster.proto with dist/ (deploy/Dockerfile does). */
import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'
import { format } from 'node:util'
import { setLogger, status, type ChannelOptions, type ServiceDefinition } from '@grpc/grpc-js'
import { loadSync, type MethodDefinition } from '@grpc/proto-loader'
import {
  BODY_READING_METHODS,
  BODY_SENDING_METHODS,
  PEER_METHODS,
  type PeerMethod,
} from '../../protocol/cluster.js'
import type { Logger } from '../../protocol/actor.js'
import type { ErrorCode } from '../../protocol/errors.js'
import { CALLER_WINDOW_OPTION } from './http2-windows.js'
import { countingSerialize } from './peer-bytes.js'

/** The largest message either end sends or accepts. A longer answer is streamed (Snapshot). */
export const PEER_MESSAGE_BYTES_MAX = 4 * 1024 * 1024
/** A streamed answer travels in chunks of this size, well under the message bound. */
export const ANSWER_CHUNK_BYTES = 1024 * 1024
/** A streamed answer is assembled in memory by the caller: this bounds it. */
export const STREAMED_ANSWER_BYTES_MAX = 64 * 1024 * 1024
/** The longest a call may run, whatever deadline it was given: a bound for every wait, and below
 * what a timer can hold (2^31 ms). */
export const PEER_CALL_MS_MAX = 10 * 60_000
/** A connection carrying calls is pinged this often, so a dead peer is noticed. */
export const KEEPALIVE_MS = 10_000
const KEEPALIVE_TIMEOUT_MS = 5_000
/** A peer that was down is tried again at least this often (gRPC's default backoff grows to 2
 * minutes, far longer than a node takes to restart): a restarted node is reached within a second
 * of its start by every thread's channel, not only by gossip's. A refused connection costs next
 * to nothing, so trying a dead peer every second is cheap. */
const RECONNECT_BACKOFF_MIN_MS = 200
const RECONNECT_BACKOFF_MAX_MS = 1_000

/** Options of every channel and server of the transport. */
export const GRPC_OPTIONS: ChannelOptions = {
  'grpc.max_send_message_length': PEER_MESSAGE_BYTES_MAX,
  'grpc.max_receive_message_length': PEER_MESSAGE_BYTES_MAX,
  'grpc.keepalive_time_ms': KEEPALIVE_MS,
  'grpc.keepalive_timeout_ms': KEEPALIVE_TIMEOUT_MS,
  'grpc.initial_reconnect_backoff_ms': RECONNECT_BACKOFF_MIN_MS,
  'grpc.max_reconnect_backoff_ms': RECONNECT_BACKOFF_MAX_MS,
  ...CALLER_WINDOW_OPTION,
}

/** The message of both directions: a JSON body, or a chunk of one. */
export interface JsonMessage {
  body: Buffer
}

/** How an rpc moves its bytes: one message each way; an answer in chunks assembled by the caller
 * (Catalog.Snapshot); a request body streamed in frames (Replica.Write); an answer's head followed
 * by a body in frames (Replica.Read). */
export type RpcShape = 'unary' | 'chunked-answer' | 'sends-body' | 'reads-body'

export interface PeerRpc {
  method: PeerMethod
  /** Its service's name in cluster.proto (`Membership`, `Catalog`, `Replica`). */
  service: string
  shape: RpcShape
  /** Typed for JSON messages; a body rpc's messages are frames (body-frames.ts). */
  definition: MethodDefinition<JsonMessage, JsonMessage>
}

const PROTO_FILE = fileURLToPath(new URL('../../../protocol/cluster.proto', import.meta.url))
const PACKAGE = 'svc.cluster'

/** The services by name and every rpc by PeerMethod, loaded once per thread. */
export const CLUSTER_SERVICES: {
  services: ReadonlyMap<string, ServiceDefinition>
  rpcs: ReadonlyMap<PeerMethod, PeerRpc>
} = loadServices()

function loadServices(): typeof CLUSTER_SERVICES {
  // `oneofs` names the field a Frame carries (`kind`); a oneof's members get no defaults.
  const loaded = loadSync(PROTO_FILE, { keepCase: true, defaults: true, oneofs: true })
  const services = new Map<string, ServiceDefinition>()
  const rpcs = new Map<PeerMethod, PeerRpc>()
  for (const [name, definition] of Object.entries(loaded)) {
    // Message types carry a `format`; services are maps of methods.
    if (!name.startsWith(`${PACKAGE}.`) || 'format' in definition) continue
    const service = name.slice(PACKAGE.length + 1)
    const counted: Record<string, PeerRpc['definition']> = {}
    for (const [rpc, method] of Object.entries(definition)) {
      const peerMethod = `${service}.${rpc}`
      assert(isPeerMethod(peerMethod), `${peerMethod} of cluster.proto is not a PeerMethod`)
      const rpcDefinition = counting(peerMethod, method as PeerRpc['definition'])
      counted[rpc] = rpcDefinition
      const shape = shapeOf(rpcDefinition)
      assert.equal(
        shape === 'sends-body',
        (BODY_SENDING_METHODS as readonly string[]).includes(peerMethod),
        `${peerMethod}: its shape in cluster.proto is ${shape}`,
      )
      assert.equal(
        shape === 'reads-body',
        (BODY_READING_METHODS as readonly string[]).includes(peerMethod),
        `${peerMethod}: its shape in cluster.proto is ${shape}`,
      )
      rpcs.set(peerMethod, { method: peerMethod, service, shape, definition: rpcDefinition })
    }
    services.set(service, counted as unknown as ServiceDefinition)
  }
  for (const method of PEER_METHODS) assert(rpcs.has(method), `cluster.proto lacks ${method}`)
  return { services, rpcs }
}

/** The rpc with both serializers counting what they make (peer-bytes.ts): a caller serializes
 * requests, a server answers, so each end counts exactly what it sends. */
function counting(method: PeerMethod, rpc: PeerRpc['definition']): PeerRpc['definition'] {
  return {
    ...rpc,
    requestSerialize: countingSerialize(method, rpc.requestSerialize),
    responseSerialize: countingSerialize(method, rpc.responseSerialize),
  }
}

function shapeOf(definition: PeerRpc['definition']): RpcShape {
  const frames = (type: PeerRpc['definition']['requestType']): boolean =>
    (type as { type?: { name?: string } }).type?.name === 'Frame'
  if (definition.requestStream) {
    assert(frames(definition.requestType) && !definition.responseStream)
    return 'sends-body'
  }
  if (!definition.responseStream) return 'unary'
  return frames(definition.responseType) ? 'reads-body' : 'chunked-answer'
}

function isPeerMethod(name: string): name is PeerMethod {
  return (PEER_METHODS as readonly string[]).includes(name)
}

export function rpcOf(method: PeerMethod): PeerRpc {
  const rpc = CLUSTER_SERVICES.rpcs.get(method)
  assert(rpc !== undefined, `no rpc for ${method}`)
  return rpc
}

/** What a caller makes of a call that failed in the transport (the handler never answered). */
export function statusCode(code: status): ErrorCode {
  switch (code) {
    case status.DEADLINE_EXCEEDED:
      return 'timeout'
    case status.RESOURCE_EXHAUSTED:
      return 'busy'
    case status.INVALID_ARGUMENT:
      return 'invalid_argument'
    default:
      // UNAVAILABLE, UNAUTHENTICATED (another cluster or key), CANCELLED, refused connections.
      return 'unavailable'
  }
}

/** @grpc/grpc-js writes its own errors (a failed bind, a broken connection) to the console; this
 * sends them to the thread's structured log instead, so that stderr keeps only the node's own
 * lines (a failed start prints exactly one). Each thread has its own copy of the library. */
export function logGrpcTo(log: Logger): void {
  const write = (...args: unknown[]): void => log.warn({ source: 'grpc-js' }, format(...args))
  setLogger({ error: write, info: write, debug: write })
}
