/** @module Cluster contracts: a member as gossip knows it, the node-to-node methods, and `Peers`,
 * the seam through which actors reach other nodes. The runtime implements Peers over gRPC
 * (authenticated, with deadlines and bounded messages); a simulation implements it with a network
 * of its own. Requests and answers of peer methods are plain JSON-shaped data, checked at the
 * boundary against the schemas of wire/ (peer-methods.ts), from which their types are inferred. */
import type { z } from 'zod'
import type { ByteSink, Request, StreamHandle } from './actor.js'
import type { Result } from './errors.js'
import type { member, memberKind, memberStatus, nodePhase } from './wire/gossip.js'
import type { bodyRange } from './wire/replica.js'

export type MemberStatus = z.infer<typeof memberStatus>
export type NodePhase = z.infer<typeof nodePhase>
/** A storage node of a pool, or a gateway (no storage, no pool). */
export type MemberKind = z.infer<typeof memberKind>

/** One member of the cluster, as its own gossip last described it (wire/gossip.ts). */
export type Member = z.infer<typeof member>

/** Every method one node may call on another, as `Service.Rpc` of protocol/cluster.proto. The
 * transport checks at load that the two lists are the same. */
export const PEER_METHODS = [
  'Membership.Ping',
  'Membership.PingReq',
  'Membership.PushPull',
  'Membership.Leave',
  'Catalog.Apply',
  'Catalog.Snapshot',
  'Catalog.Claim',
  'Catalog.Release',
  'Iam.LoginOutcome',
  'Replica.Op',
  'Replica.Write',
  'Replica.Read',
] as const
export type PeerMethod = (typeof PEER_METHODS)[number]

/** Methods whose request carries a byte stream (`Peers.openWrite`), and methods whose answer is
 * followed by one (`Peers.callForBody`). The transport checks them against the .proto's shapes. */
export const BODY_SENDING_METHODS = ['Replica.Write'] as const
export const BODY_READING_METHODS = ['Replica.Read'] as const
export type BodySendingMethod = (typeof BODY_SENDING_METHODS)[number]
export type BodyReadingMethod = (typeof BODY_READING_METHODS)[number]

/** The bytes a `callForBody` asks for, inclusive, in its request body's `range`: the serving
 * side's transport requests them from the handler's stream once the handler answered ok. */
export type BodyRange = z.infer<typeof bodyRange>

/** Where a call goes: the peer's gRPC address, and its node id when known (a seed's is not until
 * it answers). */
export interface PeerTarget {
  id: string | null
  grpcAddr: string
}

/** A peer's answer: the handler's Result, and the id of the node that answered when one did
 * (authenticated by the transport), so that a caller that knew only a seed's address learns it. */
export type PeerResult<T> = Result<T> & { readonly answeredBy?: string }

/** A sink whose `write` copies the chunk before it returns and never keeps it: the caller's buffer
 * stays its own, untouched, so one chunk can be written to several copying sinks and then to one
 * transferring sink (a stream port's), last. */
export interface CopyingSink extends ByteSink {
  readonly copies: true
}

export function isCopyingSink(sink: ByteSink): sink is CopyingSink {
  return (sink as Partial<CopyingSink>).copies === true
}

/** A body being sent to a peer: its sink, and the handler's answer. */
export interface PeerWrite<T> {
  sink: CopyingSink
  answer: Promise<PeerResult<T>>
}

export interface Peers {
  /** Calls `method` on the peer and waits for its answer until `deadlineMs` (on ctx.now()'s clock).
   * Never throws: an unreachable, partitioned or refusing peer answers `unavailable`, a late one
   * `timeout`, an overloaded one `busy`, and its handler's failure comes back as its own code. */
  call<T>(
    to: PeerTarget,
    method: PeerMethod,
    body: object,
    deadlineMs: number,
  ): Promise<PeerResult<T>>
  /** Calls `method` with a byte stream the caller writes to the returned sink, in the thread of
   * the transport (no stream port between them), ending it with trailers and MD5 as for a local
   * PUT. The serving actor reads the bytes from `msg.stream` with ctx.source. `answer` resolves
   * with the handler's Result once it answered; the sink's abort fails the peer's source with its
   * code, and any failure of the call (or an answer before the body's end) fails the sink's later
   * writes. */
  openWrite<T>(
    to: PeerTarget,
    method: BodySendingMethod,
    body: object,
    deadlineMs: number,
  ): PeerWrite<T>
  /** Calls `method`, whose handler writes a byte stream to `msg.stream` with ctx.sink (as for a
   * local GET; it may wait for `demand()`); the caller reads the bytes from the other end of
   * `sink`. `body.range` (a BodyRange) says which bytes are requested once the handler answered
   * ok. Resolves with the handler's Result (the head) before the bytes; a failure carries none,
   * and the caller's source then fails with its code. Cancelling that source cancels the call. */
  callForBody<T>(
    to: PeerTarget,
    method: BodyReadingMethod,
    body: object & { range?: BodyRange },
    sink: StreamHandle,
    deadlineMs: number,
  ): Promise<PeerResult<T>>
}

/** A call from a peer, authenticated by grpc-ingress and handed to the local actor that serves
 * `method`: `from` is the calling node's id. */
export type PeerRequestMsg = Request & {
  kind: 'peer.request'
  method: PeerMethod
  from: string
  body: unknown
  /** Replica.Write: the stream to read the caller's bytes from; Replica.Read: the stream to write
   * the bytes asked for to. */
  stream?: StreamHandle
}

/** What a local actor answers a peer's call: JSON-shaped data the transport encodes as it is, read
 * on the calling side by the method's own reader (membership.ts, the catalog's, the replica's). */
export type PeerAnswer = unknown
