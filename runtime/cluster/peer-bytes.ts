/** @module `svc_cluster_peer_bytes_sent_total{method}`: the bytes this thread's node-to-node
 * transport sends, counted as each message is serialized (a call's request or body frames on the
 * calling side, its answer or body frames on the serving side), so every rpc of every shape is
 * counted in one place. Bytes are the messages' own: gRPC's 5-byte prefix and the HTTP/2
 * headers (which carry a call's signature) are not counted. Each thread has its own counter; the
 * thread host serves it without the `actor` label, so /metrics adds up a node's threads. */
import { Counter, Registry } from 'prom-client'
import type { PeerMethod } from '../../protocol/cluster.js'

export const PEER_BYTES_SENT = 'svc_cluster_peer_bytes_sent_total'

export const peerBytesRegistry = new Registry()

const sent = new Counter({
  name: PEER_BYTES_SENT,
  help: 'Bytes of node-to-node messages this node sent (requests, body frames, answers)',
  labelNames: ['method'],
  registers: [peerBytesRegistry],
})

/** `serialize`, counting what it makes as sent by `method`. */
export function countingSerialize<T>(
  method: PeerMethod,
  serialize: (value: T) => Buffer,
): (value: T) => Buffer {
  return (value) => {
    const bytes = serialize(value)
    sent.inc({ method }, bytes.length)
    return bytes
  }
}

/** What this thread has sent for `method` so far. */
export async function peerBytesSent(method: PeerMethod): Promise<number> {
  const { values } = await sent.get()
  return values.find((value) => value.labels['method'] === method)?.value ?? 0
}
