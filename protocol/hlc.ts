/** @module Hybrid logical clock (Kulkarni et al., "Logical Physical Clocks", 2014): a stamp is the
 * highest wall clock seen (48-bit ms), a counter that orders events within one such ms (16 bits)
 * and the stamping node's tag (32 bits, first bytes of SHA-256 of its id) so that two nodes never
 * issue equal stamps. Stamps stay within a bounded distance of real time, yet follow causality:
 * every stamp a node issues is greater than every stamp it has issued or observed, even when its
 * own wall clock goes backwards. `hlcString` writes 24 lowercase hex characters whose string order
 * is the clock's order, for keys and JSON. A stamp more than HLC_MAX_AHEAD_MS ahead of the local
 * wall clock is refused, so one node's wrong clock cannot drag every other's into the future. */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'

export interface Hlc {
  wallMs: number
  logical: number
  node: number
}

/** A remote stamp further ahead of our wall clock than this is refused (CLUSTER.md section 4). */
export const HLC_MAX_AHEAD_MS = 60_000
const WALL_MS_MAX = 2 ** 48 - 1
const LOGICAL_MAX = 0xffff
const NODE_MAX = 0xffff_ffff

/** Below every stamp a clock issues: what a record written before stamps existed reads as. */
export const ZERO_HLC: Hlc = Object.freeze({ wallMs: 0, logical: 0, node: 0 })

const HLC_PATTERN = /^[0-9a-f]{24}$/

export function hlcString(h: Hlc): string {
  assert(Number.isInteger(h.wallMs) && h.wallMs >= 0 && h.wallMs <= WALL_MS_MAX)
  assert(Number.isInteger(h.logical) && h.logical >= 0 && h.logical <= LOGICAL_MAX)
  assert(Number.isInteger(h.node) && h.node >= 0 && h.node <= NODE_MAX)
  return (
    h.wallMs.toString(16).padStart(12, '0') +
    h.logical.toString(16).padStart(4, '0') +
    h.node.toString(16).padStart(8, '0')
  )
}

/** The stamp `hlcString` wrote, or null for anything else (this reads what peers send). */
export function parseHlc(s: string): Hlc | null {
  if (!HLC_PATTERN.test(s)) return null
  return {
    wallMs: parseInt(s.slice(0, 12), 16),
    logical: parseInt(s.slice(12, 16), 16),
    node: parseInt(s.slice(16), 16),
  }
}

export function compareHlc(a: Hlc, b: Hlc): number {
  return a.wallMs - b.wallMs || a.logical - b.logical || a.node - b.node
}

/** The node's 32-bit tag: the first 4 bytes of SHA-256 of its id, big-endian. */
export function nodeTag(nodeId: string): number {
  return createHash('sha256').update(nodeId, 'utf8').digest().readUInt32BE(0)
}

/** One node's clock. `now` is the node's wall clock (ctx.now in an actor). */
export class HlcClock {
  private wallMs = 0
  private logical = 0

  /** `logicalMax`: the counter's top, LOGICAL_MAX unless the stamps must fit a narrower field
   * (the coordinator's stamps become version tokens of wall-clock microseconds: at most 999). */
  constructor(
    private readonly node: number,
    private readonly now: () => number,
    private readonly logicalMax = LOGICAL_MAX,
  ) {
    assert(Number.isInteger(node) && node >= 0 && node <= NODE_MAX)
    assert(Number.isInteger(logicalMax) && logicalMax >= 1 && logicalMax <= LOGICAL_MAX)
  }

  /** The stamp of a local or send event: greater than every stamp issued or observed so far. */
  tick(): Hlc {
    const physicalMs = this.now()
    if (physicalMs > this.wallMs) this.set(physicalMs, 0)
    else this.set(this.wallMs, this.logical + 1)
    return this.current()
  }

  /** A receive event: the clock moves past `remote`. Refused (false, clock unchanged) when
   * `remote` is more than HLC_MAX_AHEAD_MS ahead of our wall clock. */
  observe(remote: Hlc): boolean {
    const physicalMs = this.now()
    if (remote.wallMs > physicalMs + HLC_MAX_AHEAD_MS) return false
    const wallMs = Math.max(this.wallMs, remote.wallMs, physicalMs)
    let logical = 0
    if (wallMs === this.wallMs && wallMs === remote.wallMs) {
      logical = Math.max(this.logical, remote.logical) + 1
    } else if (wallMs === this.wallMs) logical = this.logical + 1
    else if (wallMs === remote.wallMs) logical = remote.logical + 1
    this.set(wallMs, logical)
    return true
  }

  /** The last stamp issued or observed, without issuing one. */
  current(): Hlc {
    return { wallMs: this.wallMs, logical: this.logical, node: this.node }
  }

  /** More events in one ms than the counter holds overflow it: the stamp then moves to the
   * next ms, which keeps stamps increasing and runs at most that many events per ms ahead of
   * real time. */
  private set(wallMs: number, logical: number): void {
    if (logical > this.logicalMax) {
      wallMs += 1
      logical = 0
    }
    assert(wallMs <= WALL_MS_MAX, 'wall clock beyond 48 bits')
    this.wallMs = wallMs
    this.logical = logical
  }
}
