/** @module SWIM membership state (Das et al., 2002, with the incarnation rules of memberlist): the
 * table of known members, the merge rule for records that arrive by gossip, suspicion and its
 * expiry, refutation, and the queue of changes to piggyback on outgoing messages. Pure: time comes
 * in as an argument, so the gossiper actor and unit tests drive it alike.
 *
 * Merge rule: a record replaces the one held iff its incarnation is higher, or equal with a status
 * of higher precedence (Alive < Suspect < Dead < Left). Only a member raises its own incarnation:
 * to refute a suspicion (a record about itself that is not Alive, or newer than its own) and to
 * announce a change of its own (a restart, free bytes, phase). Left is final for its incarnation;
 * a restarted member comes back with a higher one. Each change is queued to be sent about
 * 3·log2(N+1) times, the piggyback count after which SWIM's epidemic has reached every member
 * with high probability. */
import assert from 'node:assert/strict'
import type { Member, MemberStatus, NodePhase, PeerTarget } from '../../protocol/cluster.js'
import { MEMBERS_MAX } from '../../protocol/membership.js'
import type { ClockSample } from './clock-offset.js'

export const STATUS_PRECEDENCE: Readonly<Record<MemberStatus, number>> = {
  Alive: 0,
  Suspect: 1,
  Dead: 2,
  Left: 3,
}

/** Whether `incoming` replaces `known` under the merge rule. */
export function supersedes(incoming: Member, known: Member | undefined): boolean {
  if (known === undefined) return true
  if (incoming.incarnation !== known.incarnation) return incoming.incarnation > known.incarnation
  return STATUS_PRECEDENCE[incoming.status] > STATUS_PRECEDENCE[known.status]
}

/** How long a Suspect has to refute before it is Dead: max(5 s, 4·log10(N+1) s). */
export function suspicionTimeoutMs(memberCount: number): number {
  return Math.max(5_000, Math.ceil(4 * Math.log10(memberCount + 1) * 1_000))
}

/** How many messages carry one change: 3·log2(N+1), at least 1. */
export function transmitLimit(memberCount: number): number {
  return Math.max(1, Math.ceil(3 * Math.log2(memberCount + 1)))
}

export interface MemberEntry {
  member: Member
  /** When we first held it Suspect at its incarnation (null unless Suspect). */
  suspectedAtMs: number | null
  /** The last estimate of its clock's skew against ours, and whether it is warned about. */
  skewMs: number | null
  skewWarned: boolean
  /** The last samples of its clock's offset, from answers to our calls. */
  clock: ClockSample[]
}

export type MergeOutcome = 'changed' | 'unchanged' | 'refuted' | 'full'

export function targetOf(member: Member): PeerTarget {
  return { id: member.id, grpcAddr: member.grpcAddr }
}

export class SwimTable {
  private readonly entries = new Map<string, MemberEntry>()
  /** Member id -> sends left for its current record (self included). */
  private readonly pending = new Map<string, number>()

  constructor(public self: Member) {
    assert(self.status === 'Alive')
  }

  get(id: string): MemberEntry | undefined {
    return this.entries.get(id)
  }

  /** Every member but self. */
  others(): MemberEntry[] {
    return [...this.entries.values()]
  }

  /** Known members, self included. */
  get size(): number {
    return this.entries.size + 1
  }

  /** Takes a record heard by gossip. A record about self that would outrank ours is refuted. */
  merge(incoming: Member, nowMs: number): MergeOutcome {
    if (incoming.id === this.self.id) return this.mergeAboutSelf(incoming, nowMs)
    const known = this.entries.get(incoming.id)
    if (!supersedes(incoming, known?.member)) return 'unchanged'
    if (known === undefined && !this.makeRoom()) return 'full'
    const wasSuspect = known?.member.status === 'Suspect'
    const sameIncarnation = known?.member.incarnation === incoming.incarnation
    const entry: MemberEntry = known ?? {
      member: incoming,
      suspectedAtMs: null,
      skewMs: null,
      skewWarned: false,
      clock: [],
    }
    entry.member = { ...incoming }
    if (incoming.status !== 'Suspect') entry.suspectedAtMs = null
    else if (!(wasSuspect && sameIncarnation)) entry.suspectedAtMs = nowMs
    this.entries.set(incoming.id, entry)
    // A pool member not heard from (incarnation 0) is nothing new to anyone.
    if (incoming.incarnation > 0) this.queue(incoming.id)
    return 'changed'
  }

  /** Our own probe of `id` failed, directly and indirectly: Alive becomes Suspect. */
  suspect(id: string, nowMs: number): boolean {
    const entry = this.entries.get(id)
    if (entry?.member.status !== 'Alive') return false
    entry.member = { ...entry.member, status: 'Suspect' }
    entry.suspectedAtMs = nowMs
    this.queue(id)
    return true
  }

  /** Suspects not refuted in time become Dead; returns their ids. */
  expireSuspects(nowMs: number): string[] {
    const timeoutMs = suspicionTimeoutMs(this.size)
    const expired: string[] = []
    for (const entry of this.entries.values()) {
      const since = entry.suspectedAtMs
      if (entry.member.status !== 'Suspect' || since === null || nowMs - since < timeoutMs) continue
      entry.member = { ...entry.member, status: 'Dead' }
      entry.suspectedAtMs = null
      this.queue(entry.member.id)
      expired.push(entry.member.id)
    }
    return expired
  }

  /** A change of our own (free bytes, phase), announced under a new incarnation. */
  updateSelf(change: { freeBytes?: number; phase?: NodePhase }, nowMs: number): void {
    const next = { ...this.self, ...change }
    const same = next.freeBytes === this.self.freeBytes && next.phase === this.self.phase
    if (same || this.self.status === 'Left') return
    this.self = { ...next, incarnation: this.nextIncarnation(nowMs) }
    this.queue(this.self.id)
  }

  /** Graceful shutdown: self becomes Left at its incarnation, which nothing may refute. */
  leave(): void {
    this.self = { ...this.self, status: 'Left', phase: 'stopping' }
    this.queue(this.self.id)
  }

  /** Up to `max` queued changes, those with most sends left first; each send is counted. */
  takeUpdates(max: number): Member[] {
    const chosen = [...this.pending].sort((a, b) => b[1] - a[1]).slice(0, max)
    const updates: Member[] = []
    for (const [id, left] of chosen) {
      const member = id === this.self.id ? this.self : this.entries.get(id)?.member
      if (left <= 1 || member === undefined) this.pending.delete(id)
      else this.pending.set(id, left - 1)
      if (member !== undefined) updates.push({ ...member })
    }
    return updates
  }

  get pendingUpdates(): number {
    return this.pending.size
  }

  private mergeAboutSelf(incoming: Member, nowMs: number): MergeOutcome {
    const self = this.self
    const outranks =
      incoming.incarnation > self.incarnation ||
      (incoming.incarnation === self.incarnation && incoming.status !== 'Alive')
    if (!outranks || self.status === 'Left') return 'unchanged'
    this.self = { ...self, incarnation: Math.max(incoming.incarnation + 1, nowMs) }
    this.queue(self.id)
    return 'refuted'
  }

  private nextIncarnation(nowMs: number): number {
    return Math.max(this.self.incarnation + 1, nowMs)
  }

  private queue(id: string): void {
    this.pending.set(id, transmitLimit(this.size))
  }

  /** At MEMBERS_MAX a new member takes the place of one that Left, else of a pool member never
   * heard from; with neither, it is not kept. */
  private makeRoom(): boolean {
    if (this.entries.size + 1 < MEMBERS_MAX) return true
    const gone =
      this.others().find((entry) => entry.member.status === 'Left') ??
      this.others().find((entry) => entry.member.incarnation === 0)
    if (gone === undefined) return false
    this.entries.delete(gone.member.id)
    this.pending.delete(gone.member.id)
    return true
  }
}
