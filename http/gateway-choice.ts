/** @module Which storage node a gateway sends a request to: of those gossip holds Alive and
 * serving (a Suspect one is not among them), the one that costs least, as a load balancer of
 * least expected latency does (Finagle's "peak EWMA"): its requests waiting for their first byte,
 * plus one, times its expected latency. That latency is a moving average of its recent first
 * bytes, which fades while the node is not heard from (so that one slow answer does not keep a
 * node out for good), and never less than how long its oldest request has waited: a node that
 * froze with requests in hand is soon the dearest, whatever it answered before. Ties are taken in
 * turn. One instance per ingress thread; nothing here waits or does I/O. */
import type { Member } from '../protocol/cluster.js'

/** The weight of the newest first byte in the moving average. */
const LATENCY_WEIGHT = 0.2
/** The average halves in this long without a first byte from the node. */
const LATENCY_HALF_LIFE_MS = 5_000
/** Below this, latencies count as equal (loopback answers differ by noise). */
const LATENCY_FLOOR_MS = 5
/** Nodes no longer in membership are forgotten past this many. */
const NODES_KEPT_MAX = 1_024

interface NodeLoad {
  /** Start times of its requests waiting for their first byte, by request. */
  waiting: Map<number, number>
  /** The moving average of its first bytes; null before the first. */
  latencyMs: number | null
  heardAtMs: number
}

export class NodeChoice {
  private readonly loads = new Map<string, NodeLoad>()
  private turn = 0
  private nextRequest = 0

  /** `nodes` in the order to try them, cheapest first. */
  order(nodes: readonly Member[], nowMs: number): Member[] {
    const start = this.turn++ % Math.max(1, nodes.length)
    const rotated = [...nodes.slice(start), ...nodes.slice(0, start)]
    const costs = new Map(rotated.map((node) => [node.id, this.cost(node.id, nowMs)]))
    // A stable sort: equal costs keep the rotation.
    return rotated.sort((a, b) => (costs.get(a.id) ?? 0) - (costs.get(b.id) ?? 0))
  }

  /** A request sent to `nodeId` at `nowMs`; answers its handle for `answered` and `settled`. */
  sent(nodeId: string, nowMs: number): number {
    const request = this.nextRequest++
    this.load(nodeId, nowMs).waiting.set(request, nowMs)
    return request
  }

  /** The first byte of `request`'s answer came from `nodeId`. */
  answered(nodeId: string, request: number, nowMs: number): void {
    const load = this.load(nodeId, nowMs)
    const sentAtMs = load.waiting.get(request)
    if (sentAtMs === undefined) return
    load.waiting.delete(request)
    const sampleMs = nowMs - sentAtMs
    const latencyMs = load.latencyMs === null ? sampleMs : this.fadedLatency(load, nowMs)
    load.latencyMs = latencyMs + LATENCY_WEIGHT * (sampleMs - latencyMs)
    load.heardAtMs = nowMs
  }

  /** `request` ended without an answer (given up, or the node failed): it waits no more, and its
   * wait so far counts as a latency. */
  settled(nodeId: string, request: number, nowMs: number): void {
    const load = this.loads.get(nodeId)
    const sentAtMs = load?.waiting.get(request)
    if (load === undefined || sentAtMs === undefined) return
    load.waiting.delete(request)
    load.latencyMs = Math.max(this.fadedLatency(load, nowMs), nowMs - sentAtMs)
    load.heardAtMs = nowMs
  }

  private cost(nodeId: string, nowMs: number): number {
    const load = this.loads.get(nodeId)
    if (load === undefined) return LATENCY_FLOOR_MS
    let oldestMs = nowMs
    for (const sentAtMs of load.waiting.values()) oldestMs = Math.min(oldestMs, sentAtMs)
    const expectedMs = Math.max(this.fadedLatency(load, nowMs), nowMs - oldestMs, LATENCY_FLOOR_MS)
    return (load.waiting.size + 1) * expectedMs
  }

  private fadedLatency(load: NodeLoad, nowMs: number): number {
    const faded = 0.5 ** (Math.max(0, nowMs - load.heardAtMs) / LATENCY_HALF_LIFE_MS)
    return (load.latencyMs ?? 0) * faded
  }

  private load(nodeId: string, nowMs: number): NodeLoad {
    let load = this.loads.get(nodeId)
    if (load === undefined) {
      if (this.loads.size >= NODES_KEPT_MAX) this.forgetIdle()
      load = { waiting: new Map(), latencyMs: null, heardAtMs: nowMs }
      this.loads.set(nodeId, load)
    }
    return load
  }

  private forgetIdle(): void {
    for (const [nodeId, load] of this.loads) if (load.waiting.size === 0) this.loads.delete(nodeId)
  }
}
