/** @module Membership contracts: the bodies of the `Membership.*` peer methods (SWIM gossip between
 * gossipers, CLUSTER.md section 2) and the gossiper's own messages. Every body is an envelope: the
 * cluster name (checked per message), the sender's own record (status, incarnation, addresses,
 * free bytes...), its wall clock for the skew check, and a bounded batch of recent changes to
 * other members (piggybacked dissemination). Bodies come from other processes, so the gossiper
 * reads them through `parseEnvelope` and the other readers here, never by a cast. */
import type { Request } from './actor.js'
import type { Member, MemberKind, MemberStatus, NodePhase } from './cluster.js'
import type { PeerAnswer, PeerRequestMsg } from './cluster.js'

/** Changes one message carries at most, besides the sender's own record. */
export const UPDATES_PER_MESSAGE_MAX = 16
/** Members a node keeps at most (and a PushPull carries at most). */
export const MEMBERS_MAX = 1_024

export interface GossipEnvelope {
  cluster: string
  /** The sender as it describes itself now (`Left` in a Leave). */
  sender: Member
  /** The sender's wall clock when it sent this. */
  wallMs: number
  updates: Member[]
}

/** Membership.Ping asks for an Ack; both are plain envelopes. */
export type PingBody = GossipEnvelope
export type AckBody = GossipEnvelope
/** Membership.PingReq: ping `target` for the sender, and answer whether it acked. */
export interface PingReqBody extends GossipEnvelope {
  target: { id: string; grpcAddr: string }
}
export interface PingReqAnswer extends GossipEnvelope {
  acked: boolean
}
/** Membership.PushPull: full state both ways, at join and every 30 s. */
export interface PushPullBody extends GossipEnvelope {
  members: Member[]
}
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

// ---------------------------------------------------------------------------------------------
// Reading bodies from peers

const STATUSES: readonly MemberStatus[] = ['Alive', 'Suspect', 'Dead', 'Left']
const PHASES: readonly NodePhase[] = [
  'joining',
  'serving',
  'needs_bootstrap',
  'bootstrapping',
  'stopping',
]
const KINDS: readonly MemberKind[] = ['node', 'gateway']
/** Ids, names, addresses and versions are short; anything longer is not ours. */
const TEXT_CHARS_MAX = 256

type Fields = Record<string, unknown>

function isFields(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function isText(value: unknown): value is string {
  return typeof value === 'string' && value.length <= TEXT_CHARS_MAX
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
}

function isOneOf<T extends string>(value: unknown, allowed: readonly T[]): value is T {
  return typeof value === 'string' && (allowed as readonly string[]).includes(value)
}

/** A well-formed Member record, copied field by field (nothing else a peer sent comes along). */
export function parseMember(value: unknown): Member | null {
  if (!isFields(value)) return null
  const { id, kind, pool, poolHash, httpAddr, grpcAddr, incarnation, status, phase } = value
  const { version, freeBytes, wallMs } = value
  const valid =
    isText(id) &&
    id !== '' &&
    isOneOf(kind, KINDS) &&
    (pool === null || isText(pool)) &&
    (poolHash === null || isText(poolHash)) &&
    isText(httpAddr) &&
    isText(grpcAddr) &&
    isCount(incarnation) &&
    isOneOf(status, STATUSES) &&
    isOneOf(phase, PHASES) &&
    isText(version) &&
    isCount(freeBytes) &&
    isCount(wallMs)
  if (!valid) return null
  return {
    id,
    kind,
    pool,
    poolHash,
    httpAddr,
    grpcAddr,
    incarnation,
    status,
    phase,
    version,
    freeBytes,
    wallMs,
  }
}

function parseMembers(value: unknown, max: number): Member[] | null {
  if (!Array.isArray(value) || value.length > max) return null
  const members: Member[] = []
  for (const item of value) {
    const member = parseMember(item)
    if (member === null) return null
    members.push(member)
  }
  return members
}

export function parseEnvelope(value: unknown): GossipEnvelope | null {
  if (!isFields(value) || !isText(value['cluster']) || !isCount(value['wallMs'])) return null
  const sender = parseMember(value['sender'])
  const updates = parseMembers(value['updates'], UPDATES_PER_MESSAGE_MAX)
  if (sender === null || updates === null) return null
  return { cluster: value['cluster'], sender, wallMs: value['wallMs'], updates }
}

export function parsePingReq(value: unknown): PingReqBody | null {
  const envelope = parseEnvelope(value)
  if (envelope === null || !isFields(value) || !isFields(value['target'])) return null
  const { id, grpcAddr } = value['target']
  if (!isText(id) || id === '' || !isText(grpcAddr)) return null
  return { ...envelope, target: { id, grpcAddr } }
}

export function parsePingReqAnswer(value: unknown): PingReqAnswer | null {
  const envelope = parseEnvelope(value)
  if (envelope === null || !isFields(value) || typeof value['acked'] !== 'boolean') return null
  return { ...envelope, acked: value['acked'] }
}

export function parsePushPull(value: unknown): PushPullBody | null {
  const envelope = parseEnvelope(value)
  if (envelope === null || !isFields(value)) return null
  const members = parseMembers(value['members'], MEMBERS_MAX)
  return members === null ? null : { ...envelope, members }
}
