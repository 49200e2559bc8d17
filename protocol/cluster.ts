/** @module Cluster contracts: a member as gossip knows it, the node-to-node methods, and `Peers`,
 * the seam through which actors reach other nodes. The runtime implements Peers over gRPC
 * (authenticated, with deadlines and bounded messages); a simulation implements it with a network
 * of its own. Requests and answers of peer methods are plain JSON-shaped data: the types in this
 * folder are their schema on both sides. */
import type { Request } from './actor.js'
import type { Result } from './errors.js'

export type MemberStatus = 'Alive' | 'Suspect' | 'Dead' | 'Left'
export type NodePhase = 'joining' | 'serving' | 'needs_bootstrap' | 'bootstrapping' | 'stopping'
/** A storage node of a pool, or a gateway (no storage, no pool). */
export type MemberKind = 'node' | 'gateway'

/** One member of the cluster, as its own gossip last described it. */
export interface Member {
  id: string
  kind: MemberKind
  /** The pool's name and the hash of its member list; null for a gateway. */
  pool: string | null
  poolHash: string | null
  httpAddr: string
  grpcAddr: string
  /** Raised only by the member itself, to refute a suspicion or announce a restart. */
  incarnation: number
  status: MemberStatus
  phase: NodePhase
  version: string
  /** Free bytes of its data volume (0 for a gateway): where new buckets go. */
  freeBytes: number
  /** Its wall clock when it last described itself, for the skew check. */
  wallMs: number
}

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
] as const
export type PeerMethod = (typeof PEER_METHODS)[number]

/** Where a call goes: the peer's gRPC address, and its node id when known (a seed's is not until
 * it answers). */
export interface PeerTarget {
  id: string | null
  grpcAddr: string
}

/** A peer's answer: the handler's Result, and the id of the node that answered when one did
 * (authenticated by the transport), so that a caller that knew only a seed's address learns it. */
export type PeerResult<T> = Result<T> & { readonly answeredBy?: string }

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
}

/** A call from a peer, authenticated by grpc-ingress and handed to the local actor that serves
 * `method`: `from` is the calling node's id. */
export type PeerRequestMsg = Request & {
  kind: 'peer.request'
  method: PeerMethod
  from: string
  body: unknown
}
