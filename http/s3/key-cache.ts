/** @module The ingress's cache of access-key lookups, so a request does not wait for a round trip
 * to iam. iam announces every change of a key (`ingress.forget-key`) and waits for the ingress to
 * drop it before the change counts as done. Answers and announcements come on different links, so
 * an answer older than the newest announcement for its key is used but never cached. Bounded: the
 * oldest entry goes first. */
import type { KeyLookup } from '../../protocol/messages.js'

const ENTRIES_MAX = 10_000

export class KeyCache {
  private readonly entries = new Map<string, KeyLookup>()
  /** Newest generation announced per key, and for keys not listed, the newest overall. */
  private readonly forgotten = new Map<string, number>()
  private forgottenFloor = 0

  get(accessKey: string): KeyLookup | undefined {
    return this.entries.get(accessKey)
  }

  remember(accessKey: string, lookup: KeyLookup): void {
    const forgottenAt = this.forgotten.get(accessKey) ?? this.forgottenFloor
    if (lookup.generation < forgottenAt) return
    if (this.entries.size >= ENTRIES_MAX) {
      const oldest = this.entries.keys().next().value
      if (oldest !== undefined) this.entries.delete(oldest)
    }
    this.entries.set(accessKey, lookup)
  }

  forget(accessKey: string, generation: number): void {
    this.entries.delete(accessKey)
    this.forgotten.set(accessKey, Math.max(generation, this.forgotten.get(accessKey) ?? 0))
    if (this.forgotten.size > ENTRIES_MAX) {
      // Fold the record into the floor: answers older than every announcement are not cached.
      for (const value of this.forgotten.values()) {
        this.forgottenFloor = Math.max(this.forgottenFloor, value)
      }
      this.forgotten.clear()
    }
  }
}
