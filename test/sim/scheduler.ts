/** @module Virtual time for the simulation. Every timer, message delivery, kv landing and fault is
 * an event at a virtual time; `run` takes them in order (ties in the order they were scheduled)
 * and, after each, lets the promise callbacks it started run to completion before the next:
 * actor code only awaits promises, so between two events nothing else can run, and one seed
 * gives one order of everything. Nothing here reads the real clock; the one real macrotask is
 * the driver's wait for the microtask queue to drain. */

/** Who an event belongs to: when the owner dies (an actor or node crash), its events never run. */
export interface Owner {
  alive: boolean
}

interface SimEvent {
  atMs: number
  order: number
  owner: Owner | null
  task: () => void
  cancelled: boolean
}

/** Events at most per run: a bound on any loop of timers rescheduling themselves. */
const EVENTS_MAX = 5_000_000

/** 2023-11-14T22:13:20Z, as the unit tests' fake clock starts. */
export const SIM_EPOCH_MS = 1_700_000_000_000

export class Scheduler {
  nowMs = SIM_EPOCH_MS
  private heap: SimEvent[] = []
  private order = 0
  /** Events run so far. */
  steps = 0

  /** Resolves `ms` from now (none when negative), unless `owner` dies first. */
  sleep(ms: number, owner: Owner | null = null): Promise<void> {
    return new Promise((resolve) => this.after(Math.max(0, ms), resolve, owner))
  }

  /** Runs `task` `ms` from now (at once, after what is already due, when 0). */
  after(ms: number, task: () => void, owner: Owner | null = null): () => void {
    const event: SimEvent = {
      atMs: this.nowMs + Math.max(0, ms),
      order: this.order++,
      owner,
      task,
      cancelled: false,
    }
    this.push(event)
    return () => {
      event.cancelled = true
    }
  }

  get pending(): number {
    return this.heap.length
  }

  /** Runs events until virtual time passes `untilMs`, or none is left, or `stop()` says so. */
  async run(untilMs: number, stop: () => boolean = () => false): Promise<void> {
    while (this.heap.length > 0 && !stop()) {
      const next = this.heap[0] as SimEvent
      if (next.atMs > untilMs) break
      this.pop()
      if (next.cancelled || (next.owner !== null && !next.owner.alive)) continue
      if (++this.steps > EVENTS_MAX) throw new Error(`more than ${EVENTS_MAX} events`)
      this.nowMs = Math.max(this.nowMs, next.atMs)
      next.task()
      await drainMicrotasks()
    }
    if (!stop()) this.nowMs = Math.max(this.nowMs, untilMs)
  }

  private push(event: SimEvent): void {
    const heap = this.heap
    heap.push(event)
    let index = heap.length - 1
    while (index > 0) {
      const parent = (index - 1) >> 1
      if (!earlier(event, heap[parent] as SimEvent)) break
      heap[index] = heap[parent] as SimEvent
      index = parent
    }
    heap[index] = event
  }

  private pop(): void {
    const heap = this.heap
    const last = heap.pop() as SimEvent
    if (heap.length === 0) return
    let index = 0
    for (;;) {
      const left = index * 2 + 1
      if (left >= heap.length) break
      const right = left + 1
      const child =
        right < heap.length && earlier(heap[right] as SimEvent, heap[left] as SimEvent)
          ? right
          : left
      if (!earlier(heap[child] as SimEvent, last)) break
      heap[index] = heap[child] as SimEvent
      index = child
    }
    heap[index] = last
  }
}

function earlier(one: SimEvent, other: SimEvent): boolean {
  return one.atMs < other.atMs || (one.atMs === other.atMs && one.order < other.order)
}

/** Resolves once every promise callback queued so far, and those they queue, has run: a
 * macrotask comes only after the microtask queue is empty. */
function drainMicrotasks(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve))
}
