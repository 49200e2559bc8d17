/** @module What the store keeps in cluster mode for the catalog (catalog.ts): the node's hybrid
 * clock, which stamps every catalog change made here, and the claims on bucket names this node
 * granted. A claim lives CLAIM_TTL_MS at most, so a creation whose node died frees its name. */
import type { KvOp } from '../../../protocol/actor.js'
import { hlcString, nodeTag, HlcClock } from '../../../protocol/hlc.js'
import { stampKey } from '../keys.js'

/** Longer than a creation takes (claims, then the commit and its publication), short enough that
 * a name claimed by a node that died is free again soon. */
export const CLAIM_TTL_MS = 10_000
/** Names claimed at once; past it a claim is refused as if the name were taken. */
export const CLAIMS_MAX = 10_000

export interface Claim {
  claimant: string
  expiresMs: number
}

export class CatalogState {
  readonly clock: HlcClock
  readonly claims = new Map<string, Claim>()
  /** Cancels the next pull of a peer's catalog (catalog-sync.ts). */
  cancelSync: () => void = () => undefined
  /** Set once the catalog was pulled from a peer, or no peer was there to pull from. */
  synced = false

  constructor(
    readonly nodeId: string,
    now: () => number,
  ) {
    this.clock = new HlcClock(nodeTag(nodeId), now)
  }

  /** The stamps of keys a request of this node changed, for the batch that changes them. */
  stampOps(keys: Iterable<string>): KvOp[] {
    const ops: KvOp[] = []
    for (const key of keys) {
      const value = new Uint8Array(Buffer.from(hlcString(this.clock.tick()), 'utf8'))
      ops.push({ type: 'put', key: stampKey(key), value })
    }
    return ops
  }

  /** The live claim on `bucket`, dropping it when expired. */
  claimOf(bucket: string, nowMs: number): Claim | undefined {
    const claim = this.claims.get(bucket)
    if (claim !== undefined && claim.expiresMs <= nowMs) {
      this.claims.delete(bucket)
      return undefined
    }
    return claim
  }
}
