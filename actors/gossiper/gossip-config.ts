/** @module The gossiper's settings, read from its ctx.config (the runtime validated them before
 * the node started): who this node is, its cluster, its seeds and its pool. Builds the node's own
 * first record and the records of its pool's other members, known from the start as Dead at
 * incarnation 0 so that topology shows them before they are heard from (any record of theirs
 * outranks such a record). */
import assert from 'node:assert/strict'
import type { Member, MemberKind, PeerTarget } from '../../protocol/cluster.js'
import { parsePoolNodes, poolHash, type PoolNode } from '../../protocol/placement.js'

export interface GossipConfig {
  cluster: string
  selfId: string
  /** Seeds to PushPull with at join, other than this node and its pool's members. */
  seeds: PeerTarget[]
  /** The pool's other members (none for a gateway). */
  pool: PeerTarget[]
  self: Member
}

export function readGossipConfig(
  config: Readonly<Record<string, string>>,
  nowMs: number,
): { gossip: GossipConfig; unheard: Member[] } {
  const setting = (name: string): string => {
    const value = config[name]
    assert(value !== undefined && value !== '', `${name} is not set`)
    return value
  }
  const kind: MemberKind = setting('SVC_MODE') === 'gateway' ? 'gateway' : 'node'
  const selfId = setting('SVC_NODE_ID')
  const grpcAddr = setting('SVC_NODE_GRPC_ADDR')
  const nodes = kind === 'node' ? parsePoolNodes(setting('SVC_POOL_NODES')) : []
  assert(typeof nodes !== 'string', `SVC_POOL_NODES ${String(nodes)}`)
  const self: Member = {
    id: selfId,
    kind,
    pool: kind === 'node' ? setting('SVC_POOL_NAME') : null,
    poolHash: kind === 'node' ? poolHash(nodes) : null,
    httpAddr: setting('SVC_NODE_HTTP_ADDR'),
    grpcAddr,
    // A restarted node outranks every record others hold about its previous run.
    incarnation: nowMs,
    status: 'Alive',
    // A storage node joins until its store has pulled the catalog (it then says `serving`).
    phase: kind === 'node' ? 'joining' : 'serving',
    version: config['SVC_VERSION'] ?? '',
    freeBytes: 0,
    wallMs: nowMs,
  }
  const pool = nodes.filter((node) => node.id !== selfId).map(poolTarget)
  const known = new Set([grpcAddr, ...pool.map((target) => target.grpcAddr)])
  const seeds = (config['SVC_SEEDS'] ?? '')
    .split(',')
    .map((seed) => seed.trim())
    .filter((seed) => seed !== '' && !known.has(seed))
    .map((seed): PeerTarget => ({ id: null, grpcAddr: seed }))
  const gossip: GossipConfig = { cluster: setting('SVC_CLUSTER_NAME'), selfId, seeds, pool, self }
  return { gossip, unheard: pool.map((target) => unheardMember(self, target)) }
}

function poolTarget(node: PoolNode): PeerTarget {
  return { id: node.id, grpcAddr: `${node.host}:${node.port}` }
}

function unheardMember(self: Member, target: PeerTarget): Member {
  assert(target.id !== null)
  return {
    id: target.id,
    kind: 'node',
    pool: self.pool,
    poolHash: self.poolHash,
    httpAddr: '',
    grpcAddr: target.grpcAddr,
    incarnation: 0,
    status: 'Dead',
    phase: 'joining',
    version: '',
    freeBytes: 0,
    wallMs: 0,
  }
}
