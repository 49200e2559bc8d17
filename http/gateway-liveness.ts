/** @module Whether a storage node's process runs, asked of its HTTP server apart from a request.
 * A node that took a request's body may take long to store it (fsync, replicas), so a wait for its
 * answer says nothing; a frozen process (SIGSTOP, a stalled VM) keeps its port and its kernel
 * takes connections and bytes, but answers nothing. A GET /health on a connection of its own is
 * answered (200 or 503 alike) by any node whose process runs, however busy its store is. One probe
 * at a time per node serves every request waiting on it. */
import { request as httpRequest } from 'node:http'

/** A node is probed again once its last answer is older than this. */
const PROBE_INTERVAL_MS = 500

export class NodeLiveness {
  /** By address: as many as the storage nodes. */
  private readonly nodes = new Map<string, { seenMs: number; probing: boolean }>()

  constructor(private readonly now: () => number) {}

  /** When the node at `address` last answered a probe (0: never); probes it when that is old. */
  lastSeen(address: string): number {
    let node = this.nodes.get(address)
    if (node === undefined) {
      node = { seenMs: 0, probing: false }
      this.nodes.set(address, node)
    }
    if (!node.probing && this.now() - node.seenMs >= PROBE_INTERVAL_MS) this.probe(address, node)
    return node.seenMs
  }

  private probe(address: string, node: { seenMs: number; probing: boolean }): void {
    node.probing = true
    const at = address.lastIndexOf(':')
    const host = address.slice(0, at).replace(/^\[|\]$/g, '')
    // A connection of its own: the agent's sockets to a frozen node are all taken by waits.
    const probe = httpRequest({ host, port: Number(address.slice(at + 1)), path: '/health' })
    const done = (): void => {
      node.probing = false
      probe.destroy()
    }
    probe.on('response', (answer) => {
      node.seenMs = Math.max(node.seenMs, this.now())
      answer.resume()
      done()
    })
    probe.on('error', done)
    // A probe unanswered is left to the caller's bound; it ends after a few of them.
    probe.setTimeout(PROBE_INTERVAL_MS * 8, done)
    probe.end()
  }
}
