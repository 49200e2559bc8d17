/** @module Well-formed bodies of node-to-node methods for transport tests: every request and
 * answer crossing the transport must fit its method's schema (protocol/wire/). */
import type { Member } from '../../protocol/cluster.js'
import type { GossipEnvelope } from '../../protocol/membership.js'

/** A storage node's record as its gossip would describe it. */
export function memberRecord(id: string): Member {
  return {
    id,
    kind: 'node',
    pool: 'pool-a',
    poolHash: 'hash-a',
    httpAddr: '127.0.0.1:1',
    grpcAddr: '127.0.0.1:2',
    incarnation: 0,
    status: 'Alive',
    phase: 'serving',
    version: 'test',
    freeBytes: 0,
    wallMs: 1,
  }
}

/** A Membership.Ping (or Leave) from node `id` of `cluster`, and the Ack one answers. */
export function gossipEnvelope(cluster: string, id: string): GossipEnvelope {
  return { cluster, sender: memberRecord(id), wallMs: 1, updates: [] }
}
