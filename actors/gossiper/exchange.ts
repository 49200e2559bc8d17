/** @module One gossip exchange as either side sees it: the envelope every message carries (our
 * record, our wall clock, a bounded batch of changes), a peer call bounded by its own deadline and
 * by the number of calls in flight, and the reading of an envelope that arrives: the cluster name
 * checked, every record merged, and, from an answer to our call, the sender's clock offset
 * sampled (clock-offset.ts: a pause or a slow exchange is not skew). A skew above
 * CLOCK_SKEW_WARN_MS is logged once each time a member's estimate crosses it. */
import type { Context } from '../../protocol/actor.js'
import type { PeerMethod, PeerTarget } from '../../protocol/cluster.js'
import { fail, type Result } from '../../protocol/errors.js'
import { UPDATES_PER_MESSAGE_MAX, type GossipEnvelope } from '../../protocol/membership.js'
import { addSample, clockSample } from './clock-offset.js'
import type { GossipConfig } from './gossip-config.js'
import type { MemberEntry, SwimTable } from './swim.js'

export const CLOCK_SKEW_WARN_MS = 500
/** Peer calls one gossiper has in flight at most: probes (1 + 3 indirect a second), pings of Dead
 * members, PushPulls to seeds and pool, Leaves at shutdown. Past it a call answers `busy`. */
export const PEER_CALLS_IN_FLIGHT_MAX = 256

export interface GossiperState {
  config: GossipConfig
  table: SwimTable
  /** Members still to probe in this round, in shuffled order. */
  probeOrder: string[]
  peerCallsInFlight: number
  /** Whether a PushPull was answered yet (join retries every 2 s until then). */
  joined: boolean
  ticks: number
  stopping: boolean
  cancelTimers: (() => void)[]
}

/** Our envelope. A message to a member we hold as not Alive also carries its record, so that a
 * member partitioned away learns of its suspicion or death and refutes it. */
export function envelope(state: GossiperState, ctx: Context, aboutId?: string): GossipEnvelope {
  const wallMs = ctx.now()
  state.table.self = { ...state.table.self, wallMs }
  const updates = state.table.takeUpdates(UPDATES_PER_MESSAGE_MAX)
  const about = aboutId === undefined ? undefined : state.table.get(aboutId)?.member
  if (about !== undefined && about.status !== 'Alive' && !updates.some((m) => m.id === aboutId)) {
    if (updates.length >= UPDATES_PER_MESSAGE_MAX) updates.pop()
    updates.push({ ...about })
  }
  return { cluster: state.config.cluster, sender: { ...state.table.self }, wallMs, updates }
}

/** Calls a peer and waits at most `timeoutMs`, whatever the transport does. */
export async function callPeer<T>(
  state: GossiperState,
  ctx: Context,
  to: PeerTarget,
  method: PeerMethod,
  body: GossipEnvelope,
  timeoutMs: number,
): Promise<Result<T>> {
  if (state.peerCallsInFlight >= PEER_CALLS_IN_FLIGHT_MAX) {
    return fail('busy', `${PEER_CALLS_IN_FLIGHT_MAX} gossip calls in flight`)
  }
  state.peerCallsInFlight++
  let cancel = (): void => undefined
  const late = new Promise<Result<T>>((resolve) => {
    cancel = ctx.after(timeoutMs, () => {
      resolve(fail('timeout', `${method} to ${to.grpcAddr} unanswered in ${timeoutMs} ms`))
    })
  })
  try {
    return await Promise.race([ctx.peers.call<T>(to, method, body, ctx.now() + timeoutMs), late])
  } finally {
    cancel()
    state.peerCallsInFlight--
  }
}

/** One call and its answer taken in: null when the call failed (an answer that does not fit its
 * method's schema fails in the transport, protocol/wire/gossip.ts), or the answer is of another
 * cluster, or from another node than the one called. */
export async function exchange<T extends GossipEnvelope>(
  state: GossiperState,
  ctx: Context,
  call: { to: PeerTarget; method: PeerMethod; body: GossipEnvelope; timeoutMs: number },
): Promise<T | null> {
  const sentAtMs = ctx.now()
  const answer = await callPeer<T>(state, ctx, call.to, call.method, call.body, call.timeoutMs)
  if (!answer.ok) return null
  const reply = answer.value
  if (call.to.id !== null && reply.sender.id !== call.to.id) return null
  return absorb(state, ctx, reply, sentAtMs) ? reply : null
}

/** Takes in an envelope from a peer: false (and nothing taken) when it is of another cluster.
 * `sentAtMs`, when our call was sent, is known for an answer to our call, not for a request. */
export function absorb(
  state: GossiperState,
  ctx: Context,
  received: GossipEnvelope,
  sentAtMs: number | null,
): boolean {
  if (received.cluster !== state.config.cluster) return false
  const nowMs = ctx.now()
  for (const member of [received.sender, ...received.updates]) {
    if (state.table.merge(member, nowMs) === 'refuted') {
      ctx.log.info({ incarnation: state.table.self.incarnation }, 'suspicion refuted')
    }
  }
  const entry = state.table.get(received.sender.id)
  const sample = sentAtMs === null ? null : clockSample(sentAtMs, nowMs, received.wallMs)
  if (entry !== undefined && sample !== null) noteSkew(entry, ctx, addSample(entry.clock, sample))
  return true
}

function noteSkew(entry: MemberEntry, ctx: Context, skewMs: number): void {
  entry.skewMs = skewMs
  if (skewMs <= CLOCK_SKEW_WARN_MS) {
    entry.skewWarned = false
  } else if (!entry.skewWarned) {
    entry.skewWarned = true
    ctx.log.warn({ member: entry.member.id, skewMs }, 'clock skew above 500 ms')
  }
}

/** The largest skew estimate among members held Alive or Suspect (0 without any). */
export function maxClockSkewMs(table: SwimTable): number {
  let max = 0
  for (const entry of table.others()) {
    const live = entry.member.status === 'Alive' || entry.member.status === 'Suspect'
    if (live && entry.skewMs !== null) max = Math.max(max, entry.skewMs)
  }
  return max
}
