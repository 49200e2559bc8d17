/** @module ShardLocks (protocol/actor.ts) in memory every store shard of the node shares: a
 * SharedArrayBuffer the main thread makes once and hands to each shard's thread, which outlives
 * any shard's death. Each lock stripe has a writer word (0, or the exclusive holder's shard + 1),
 * the holder's count of exclusive claims, a claim count per shard for shared claims, and a version
 * that every release moves, on which a shard that found the stripe taken waits
 * (`Atomics.waitAsync`: never blocking its event loop). Pin stripes hold a count per shard.
 *
 * A claim only ever moves this shard's own words, then checks the others' (sequentially
 * consistent Atomics): of two shards claiming at once in conflicting modes, at least one sees the
 * other and backs out, so neither holds what the other excludes. Both may back out; they wait for
 * a change and try again, within their deadline. */
import assert from 'node:assert/strict'
import type { ClaimMode, ShardLocks } from '../protocol/actor.js'
import { fnv1a } from '../protocol/key-shard.js'

/** Lock and pin stripes: collisions only make a claim or a garbage removal wait needlessly. */
const LOCK_STRIPES = 4096
const PIN_STRIPES = 4096
/** Words of a lock stripe before its per-shard counts. */
const WRITER = 0
const WRITER_COUNT = 1
const VERSION = 2
/** A bit per shard that found the stripe taken and waits for it. */
const WAITING = 3
const LOCK_HEADER_WORDS = 4

/** ES2024's Atomics.waitAsync, which Node has; the project's TypeScript library predates it. */
interface AtomicsWaitAsync {
  waitAsync(
    array: Int32Array,
    index: number,
    value: number,
    timeoutMs: number,
  ): { async: false; value: string } | { async: true; value: Promise<string> }
}

export function createShardLockMemory(shards: number): SharedArrayBuffer {
  const words = LOCK_STRIPES * (LOCK_HEADER_WORDS + shards) + PIN_STRIPES * shards
  return new SharedArrayBuffer(words * Int32Array.BYTES_PER_ELEMENT)
}

export class SharedShardLocks implements ShardLocks {
  private readonly words: Int32Array
  private readonly stripeWords: number
  private readonly pinBase: number
  /** Stripes this shard was granted in the synchronous step running now. */
  private readonly thisStep = new Set<number>()

  constructor(
    memory: SharedArrayBuffer,
    readonly shard: number,
    readonly shards: number,
  ) {
    assert(Number.isInteger(shard) && shard >= 0 && shard < shards, `shard ${shard} of ${shards}`)
    this.words = new Int32Array(memory)
    this.stripeWords = LOCK_HEADER_WORDS + shards
    this.pinBase = LOCK_STRIPES * this.stripeWords
    assert.equal(this.words.length, this.pinBase + PIN_STRIPES * shards, 'lock memory size')
  }

  claim(name: string, mode: ClaimMode): boolean {
    const base = this.base(name)
    const me = this.shard + 1
    const writer = Atomics.load(this.words, base + WRITER)
    if (writer !== 0 && writer !== me) return this.refused(base)
    // Another shard waits for the stripe: while it is held, no new claim comes before that one's,
    // so that a shard whose requests keep it busy (one body written over and over) drains.
    // A claim again in the step that took it (a check, then the change it decided) is not new.
    const othersWait = (Atomics.load(this.words, base + WAITING) & ~this.bit()) !== 0
    if (othersWait && this.held(base) && !this.thisStep.has(base)) return this.refused(base)
    if (mode === 'shared') {
      Atomics.add(this.words, base + LOCK_HEADER_WORDS + this.shard, 1)
      const now = Atomics.load(this.words, base + WRITER)
      if (now === 0 || now === me) return this.granted(base)
      this.dropShared(base)
      return this.refused(base)
    }
    if (writer === 0 && Atomics.compareExchange(this.words, base + WRITER, 0, me) !== 0) {
      return this.refused(base)
    }
    if (this.othersShare(base)) {
      if (Atomics.load(this.words, base + WRITER_COUNT) === 0) this.clearWriter(base)
      return this.refused(base)
    }
    Atomics.add(this.words, base + WRITER_COUNT, 1)
    return this.granted(base)
  }

  stopWaiting(name: string): void {
    Atomics.and(this.words, this.base(name) + WAITING, ~this.bit())
  }

  release(name: string, mode: ClaimMode): void {
    const base = this.base(name)
    if (mode === 'shared') {
      assert(Atomics.load(this.words, base + LOCK_HEADER_WORDS + this.shard) > 0, 'not shared')
      this.dropShared(base)
      return
    }
    assert.equal(Atomics.load(this.words, base + WRITER), this.shard + 1, 'not held exclusively')
    if (Atomics.sub(this.words, base + WRITER_COUNT, 1) === 1) this.clearWriter(base)
  }

  version(name: string): number {
    return Atomics.load(this.words, this.base(name) + VERSION)
  }

  async changed(name: string, seen: number, deadlineMs: number): Promise<void> {
    const waitMs = deadlineMs - Date.now()
    if (waitMs <= 0) return
    const waited = (Atomics as unknown as AtomicsWaitAsync).waitAsync(
      this.words,
      this.base(name) + VERSION,
      seen,
      waitMs,
    )
    if (!waited.async) return
    // The wait alone holds no event loop open (nor, in every Node, keeps its own timeout): a
    // timer does both.
    let timer: NodeJS.Timeout | undefined
    const timedOut = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, waitMs)
    })
    await Promise.race([waited.value, timedOut])
    clearTimeout(timer)
  }

  pin(fileId: string): void {
    Atomics.add(this.words, this.pinIndex(fileId, this.shard), 1)
  }

  unpin(fileId: string): void {
    const before = Atomics.sub(this.words, this.pinIndex(fileId, this.shard), 1)
    assert(before > 0, `unpin of ${fileId}, which this shard has not pinned`)
  }

  pinned(fileId: string): boolean {
    for (let shard = 0; shard < this.shards; shard++) {
      if (Atomics.load(this.words, this.pinIndex(fileId, shard)) > 0) return true
    }
    return false
  }

  releaseAll(): void {
    const me = this.shard + 1
    for (let stripe = 0; stripe < LOCK_STRIPES; stripe++) {
      const base = stripe * this.stripeWords
      if (Atomics.exchange(this.words, base + LOCK_HEADER_WORDS + this.shard, 0) !== 0) {
        this.moved(base)
      }
      if (Atomics.load(this.words, base + WRITER) === me) {
        Atomics.store(this.words, base + WRITER_COUNT, 0)
        this.clearWriter(base)
      }
      Atomics.and(this.words, base + WAITING, ~this.bit())
    }
    for (let stripe = 0; stripe < PIN_STRIPES; stripe++) {
      Atomics.store(this.words, this.pinBase + stripe * this.shards + this.shard, 0)
    }
  }

  private base(name: string): number {
    return (fnv1a(name) % LOCK_STRIPES) * this.stripeWords
  }

  private pinIndex(fileId: string, shard: number): number {
    return this.pinBase + (fnv1a(fileId) % PIN_STRIPES) * this.shards + shard
  }

  private bit(): number {
    return 1 << this.shard
  }

  private refused(base: number): false {
    Atomics.or(this.words, base + WAITING, this.bit())
    return false
  }

  private granted(base: number): true {
    Atomics.and(this.words, base + WAITING, ~this.bit())
    if (this.thisStep.size === 0) queueMicrotask(() => this.thisStep.clear())
    this.thisStep.add(base)
    return true
  }

  /** Whether any shard holds the stripe, in either mode. */
  private held(base: number): boolean {
    if (Atomics.load(this.words, base + WRITER) !== 0) return true
    for (let shard = 0; shard < this.shards; shard++) {
      if (Atomics.load(this.words, base + LOCK_HEADER_WORDS + shard) > 0) return true
    }
    return false
  }

  private othersShare(base: number): boolean {
    for (let shard = 0; shard < this.shards; shard++) {
      if (shard === this.shard) continue
      if (Atomics.load(this.words, base + LOCK_HEADER_WORDS + shard) > 0) return true
    }
    return false
  }

  private dropShared(base: number): void {
    Atomics.sub(this.words, base + LOCK_HEADER_WORDS + this.shard, 1)
    this.moved(base)
  }

  private clearWriter(base: number): void {
    Atomics.store(this.words, base + WRITER, 0)
    this.moved(base)
  }

  /** A claim went: whoever waits on the stripe tries again. */
  private moved(base: number): void {
    Atomics.add(this.words, base + VERSION, 1)
    Atomics.notify(this.words, base + VERSION)
  }
}

/** The locks of a store that runs alone (one shard), in memory of its own. */
export function soleShardLocks(): SharedShardLocks {
  return new SharedShardLocks(createShardLockMemory(1), 0, 1)
}
