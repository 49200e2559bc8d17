/** @module Gives an actor thread's V8 heap back once a burst is over. Under load a thread's old
 * generation fills with objects that outlived a few scavenges (requests in flight) and its young
 * generation grows to its bound; V8 collects and shrinks them only when allocation reaches its
 * limits, or when its memory reducer runs (8 s after a full collection, and only while no
 * JavaScript runs), so after a burst of 4 KiB and 1 MiB requests the node stayed 60-70 MB above its
 * idle size. Every HEAP_REDUCE_CHECK_MS the thread looks at its event-loop utilization. In a quiet
 * interval (under HEAP_QUIET_UTILIZATION) it runs a full collection if its heap grew by
 * HEAP_REDUCE_GROWTH_BYTES over the smallest it was since the last one; once it has been quiet for
 * HEAP_SHRINK_QUIET_MS after being busy, it runs one more, in which V8 shrinks the young generation
 * (it does so only when little was allocated over the last ~5 s). A busy thread is left alone:
 * these collections stop the thread (a few milliseconds with these heaps). `--expose-gc` is set by
 * main.ts; without it nothing runs. */
import { getHeapStatistics } from 'node:v8'
import { performance, type EventLoopUtilization } from 'node:perf_hooks'
import {
  HEAP_QUIET_UTILIZATION,
  HEAP_REDUCE_CHECK_MS,
  HEAP_REDUCE_GROWTH_BYTES,
  HEAP_SHRINK_QUIET_MS,
} from './knobs.js'

export interface HeapSample {
  /** Event-loop utilization over the last interval, 0..1. */
  utilization: number
  /** V8's heap size (committed) now. */
  heapBytes: number
}

/** When to collect, from one sample per interval; kept apart from V8 so that it is testable. */
export class HeapReducerPolicy {
  private smallest: number
  private quietMs = 0
  private shrinkPending = false

  constructor(
    heapBytes: number,
    private readonly checkMs = HEAP_REDUCE_CHECK_MS,
  ) {
    this.smallest = heapBytes
  }

  /** True when a full collection should run now; call `collected` after it. */
  shouldCollect(sample: HeapSample): boolean {
    this.smallest = Math.min(this.smallest, sample.heapBytes)
    if (sample.utilization > HEAP_QUIET_UTILIZATION) {
      this.quietMs = 0
      this.shrinkPending = true
      return false
    }
    this.quietMs += this.checkMs
    if (sample.heapBytes - this.smallest >= HEAP_REDUCE_GROWTH_BYTES) return true
    if (this.shrinkPending && this.quietMs >= HEAP_SHRINK_QUIET_MS) {
      this.shrinkPending = false
      return true
    }
    return false
  }

  collected(heapBytes: number): void {
    this.smallest = heapBytes
  }
}

type FullGc = () => void

/** Starts this thread's reducer, which calls `onCollect` after each collection it ran; returns
 * its stop. */
export function startHeapReducer(onCollect: () => void): () => void {
  const gc = (globalThis as { gc?: FullGc }).gc
  if (gc === undefined) return () => undefined
  const heapBytes = (): number => getHeapStatistics().total_heap_size
  const policy = new HeapReducerPolicy(heapBytes())
  let last: EventLoopUtilization = performance.eventLoopUtilization()
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization()
    const utilization = performance.eventLoopUtilization(now, last).utilization
    last = now
    if (!policy.shouldCollect({ utilization, heapBytes: heapBytes() })) return
    // No options: gc({ type: 'major' }) left this heap's garbage in place on Node 20.
    gc()
    policy.collected(heapBytes())
    onCollect()
  }, HEAP_REDUCE_CHECK_MS)
  timer.unref()
  return () => clearInterval(timer)
}
