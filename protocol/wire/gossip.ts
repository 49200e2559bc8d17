/** @module The Membership.* calls: SWIM gossip between gossipers (CLUSTER.md section 2). Every body
 * is an envelope: the cluster name (checked per message by the gossiper, against its config), the
 * sender's own record, its wall clock for the skew check, and a bounded batch of recent changes to
 * other members (piggybacked dissemination). Ping and Leave carry an envelope and are answered
 * with one (an Ack); PingReq asks the callee to ping `target` and answers whether it acked;
 * PushPull carries full state both ways. */
import { z } from 'zod'
import { MEMBERS_MAX, UPDATES_PER_MESSAGE_MAX } from './bounds.js'
import { count } from './fields.js'

/** Ids, names, addresses and versions are short; anything longer is not ours. */
const TEXT_CHARS_MAX = 256

const text = z.string().max(TEXT_CHARS_MAX)
const id = text.min(1)

export const memberStatus = z.enum(['Alive', 'Suspect', 'Dead', 'Left'])
export const nodePhase = z.enum([
  'joining',
  'serving',
  'needs_bootstrap',
  'bootstrapping',
  'stopping',
])
/** A storage node of a pool, or a gateway (no storage, no pool). */
export const memberKind = z.enum(['node', 'gateway'])

/** One member of the cluster, as its own gossip last described it. */
export const member = z.strictObject({
  id,
  kind: memberKind,
  /** The pool's name and the hash of its member list; null for a gateway. */
  pool: text.nullable(),
  poolHash: text.nullable(),
  httpAddr: text,
  grpcAddr: text,
  /** Raised only by the member itself, to refute a suspicion or announce a restart. */
  incarnation: count,
  status: memberStatus,
  phase: nodePhase,
  version: text,
  /** Free bytes of its data volume (0 for a gateway): where new buckets go. */
  freeBytes: count,
  /** Its wall clock when it last described itself, for the skew check. */
  wallMs: count,
})

const envelopeShape = {
  cluster: text,
  /** The sender as it describes itself now (`Left` in a Leave). */
  sender: member,
  /** The sender's wall clock when it sent this. */
  wallMs: count,
  updates: z.array(member).max(UPDATES_PER_MESSAGE_MAX),
}

/** Membership.Ping and Leave, and their answer (an Ack). */
export const gossipEnvelope = z.strictObject(envelopeShape)
/** Membership.PingReq: ping `target` for the sender, and answer whether it acked. */
export const pingReqBody = z.strictObject({
  ...envelopeShape,
  target: z.strictObject({ id, grpcAddr: text }),
})
export const pingReqAnswer = z.strictObject({ ...envelopeShape, acked: z.boolean() })
/** Membership.PushPull: full state both ways, at join and every 30 s. */
export const pushPullBody = z.strictObject({
  ...envelopeShape,
  members: z.array(member).max(MEMBERS_MAX),
})
