/** @module Membership contracts: the bodies of the `Membership.*` peer methods (SWIM gossip between
 * gossipers, CLUSTER.md section 2) and the gossiper's own messages. Every body is an envelope: the
 * cluster name (checked per message), the sender's own record (status, incarnation, addresses,
 * free bytes...), its wall clock for the skew check, and a bounded batch of recent changes to
 * other members (piggybacked dissemination). Bodies come from other processes: the transport checks
 * each against its schema (wire/gossip.ts, which these types are inferred from) before the
 * gossiper sees it. */
import type { z } from 'zod'
import type { Request } from './actor.js'
import type { Member, NodePhase } from './cluster.js'
import type { PeerAnswer, PeerRequestMsg } from './cluster.js'
import type { gossipEnvelope, pingReqAnswer, pingReqBody, pushPullBody } from './wire/gossip.js'

export { MEMBERS_MAX, UPDATES_PER_MESSAGE_MAX } from './wire/bounds.js'

export type GossipEnvelope = z.infer<typeof gossipEnvelope>
/** Membership.Ping asks for an Ack; both are plain envelopes. */
export type PingBody = GossipEnvelope
export type AckBody = GossipEnvelope
/** Membership.PingReq: ping `target` for the sender, and answer whether it acked. */
export type PingReqBody = z.infer<typeof pingReqBody>
export type PingReqAnswer = z.infer<typeof pingReqAnswer>
/** Membership.PushPull: full state both ways, at join and every 30 s. */
export type PushPullBody = z.infer<typeof pushPullBody>
/** Membership.Leave: the sender's record with status `Left`; answered with an Ack. */
export type LeaveBody = GossipEnvelope

/** A member as `membership.view` shows it: with its clock's last skew estimate (null before any
 * message from it). */
export type ViewedMember = Member & { skewMs: number | null }

export interface MembershipView {
  self: Member
  /** Every known member, self included. */
  members: ViewedMember[]
  /** The largest skew estimate among Alive and Suspect members (0 without any). */
  maxClockSkewMs: number
}

export type GossiperMsg =
  | PeerRequestMsg
  | (Request & { kind: 'membership.view' })
  /** The node tells gossip its free space or phase; the change is disseminated. */
  | (Request & { kind: 'membership.update-self'; freeBytes?: number; phase?: NodePhase })

/** `membership.update-self` answers the node's own record as changed. */
export type GossiperReply = {
  'peer.request': PeerAnswer
  'membership.view': MembershipView
  'membership.update-self': Member
}
