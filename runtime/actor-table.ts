/** @module The actors of a node, the links between them and the order they start in. Start order
 * follows dependencies (a store before the actors that read it); stop order is the reverse. */
import type { Actor, ActorName } from '../protocol/actor.js'
import type { KindOf } from '../protocol/protocols.js'

/** An actor of any name, as the runtime hosts it (its messages come from other threads). */
export type AnyActor = Actor<unknown, ActorName>

/** Loads an actor's module inside its own worker thread. */
export async function loadActor(name: ActorName): Promise<AnyActor> {
  switch (name) {
    case 'replica-store':
      return (await import('../actors/replica-store/replica-store.js'))
        .replicaStore as unknown as AnyActor
    case 'coordinator':
      return (await import('../actors/coordinator/coordinator.js'))
        .coordinator as unknown as AnyActor
    case 'iam':
      return (await import('../actors/iam/iam.js')).iam as unknown as AnyActor
    case 'gossiper':
      return (await import('../actors/gossiper/gossiper.js')).gossiper as unknown as AnyActor
    case 'hint-queue':
      return (await import('../actors/hint-queue/hint-queue.js')).hintQueue as unknown as AnyActor
    case 'anti-entropy':
      return (await import('../actors/anti-entropy/anti-entropy.js'))
        .antiEntropy as unknown as AnyActor
    case 'scrubber':
      return (await import('../actors/scrubber/scrubber.js')).scrubber as unknown as AnyActor
    case 'lifecycle':
      return (await import('../actors/lifecycle/lifecycle.js')).lifecycle as unknown as AnyActor
    case 'http-ingress':
      return (await import('./ingress-host.js')).httpIngress as unknown as AnyActor
    case 'grpc-ingress':
      return (await import('./grpc-ingress-host.js')).grpcIngress as unknown as AnyActor
  }
}

/** Single mode: every actor once, in start order. No coordinator: the ingress sends object and
 * bucket requests to the store (objectActor in protocol/actor.ts). */
export const SINGLE_NODE_ACTORS: readonly ActorName[] = [
  'replica-store',
  'iam',
  'scrubber',
  'lifecycle',
  'http-ingress',
]

/** Directed links [caller, callee]: who may send requests to whom. */
export const SINGLE_NODE_LINKS: readonly (readonly [ActorName, ActorName])[] = [
  ['iam', 'replica-store'],
  ['http-ingress', 'replica-store'],
  ['http-ingress', 'iam'],
  // iam announces changed keys so the ingress drops its cached lookups.
  ['iam', 'http-ingress'],
  // The scrubber reads blobs through the store, which reports the corrupt ones its reads meet;
  // /metrics asks the scrubber for its counts.
  ['scrubber', 'replica-store'],
  ['replica-store', 'scrubber'],
  ['http-ingress', 'scrubber'],
  // The lifecycle actor reads the buckets' rules and sends its expiries through the object actor
  // (the store here, the coordinator in a cluster) and keeps its record in the store; its status,
  // for /metrics and the admin API.
  ['lifecycle', 'replica-store'],
  ['http-ingress', 'lifecycle'],
]

/** A storage node of a cluster: the single node's actors, then the node-to-node server (which
 * hands calls from peers to gossip and to the store) and gossip. Gossip stops before the server
 * (stop order is the reverse), as SPEC.md section 3 orders a shutdown: the node's `Left` is
 * broadcast while it still answers its peers' calls in flight, and only then does gRPC stop. */
export const CLUSTER_NODE_ACTORS: readonly ActorName[] = [
  'replica-store',
  'coordinator',
  'iam',
  'grpc-ingress',
  'gossiper',
  'scrubber',
  'hint-queue',
  'anti-entropy',
  'lifecycle',
  'http-ingress',
]

export const CLUSTER_NODE_LINKS: readonly (readonly [ActorName, ActorName])[] = [
  ...SINGLE_NODE_LINKS,
  // Object and bucket requests go through the quorum path.
  ['http-ingress', 'coordinator'],
  ['coordinator', 'replica-store'],
  // The catalog asks gossip who is alive, and tells iam of users changed elsewhere.
  ['replica-store', 'gossiper'],
  ['replica-store', 'iam'],
  ['grpc-ingress', 'gossiper'],
  ['grpc-ingress', 'replica-store'],
  // A restarted gossiper asks the store whether the node serves yet.
  ['gossiper', 'replica-store'],
  // The cluster administration endpoints read membership.
  ['http-ingress', 'gossiper'],
  // The quorum path asks gossip which replicas are reachable.
  ['coordinator', 'gossiper'],
  // Hints: who came back (gossip), the hints (the store), their delivery (the coordinator).
  ['hint-queue', 'gossiper'],
  ['hint-queue', 'replica-store'],
  ['hint-queue', 'coordinator'],
  // Its counters, for /metrics and the repair status.
  ['http-ingress', 'hint-queue'],
  // A heal asks gossip which nodes of the pool may hold a good copy.
  ['scrubber', 'gossiper'],
  // Anti-entropy: who is alive (gossip), this node's digests and round record (the store), the
  // sync of a key that differs (the coordinator); its status, for /metrics and repair-status.
  ['anti-entropy', 'gossiper'],
  ['anti-entropy', 'replica-store'],
  ['anti-entropy', 'coordinator'],
  ['http-ingress', 'anti-entropy'],
  // A bootstrap: the store wipes, then has anti-entropy sync the node from its peers.
  ['replica-store', 'anti-entropy'],
  // Failed logins are counted cluster-wide: iam tells the live nodes (gossip), and takes theirs.
  ['iam', 'gossiper'],
  ['grpc-ingress', 'iam'],
  // Lifecycle: its expiries take the quorum path; who runs a bucket follows who is alive.
  ['lifecycle', 'coordinator'],
  ['lifecycle', 'gossiper'],
]

/** A gateway: no storage and no identities of its own. Its ingress forwards every request to a
 * live storage node that gossip knows (runtime/gateway-proxy.ts). */
export const GATEWAY_ACTORS: readonly ActorName[] = ['grpc-ingress', 'gossiper', 'http-ingress']

export const GATEWAY_LINKS: readonly (readonly [ActorName, ActorName])[] = [
  ['grpc-ingress', 'gossiper'],
  ['http-ingress', 'gossiper'],
]

export interface ActorTable {
  actors: readonly ActorName[]
  links: readonly (readonly [ActorName, ActorName])[]
}

/** The actors and links of a node in `mode`, checked (checkLinks) before anything starts. */
export function actorTable(mode: 'single' | 'cluster' | 'gateway'): ActorTable {
  const table = tableOf(mode)
  checkLinks(table)
  return table
}

function tableOf(mode: 'single' | 'cluster' | 'gateway'): ActorTable {
  switch (mode) {
    case 'single':
      return { actors: SINGLE_NODE_ACTORS, links: SINGLE_NODE_LINKS }
    case 'cluster':
      return { actors: CLUSTER_NODE_ACTORS, links: CLUSTER_NODE_LINKS }
    case 'gateway':
      return { actors: GATEWAY_ACTORS, links: GATEWAY_LINKS }
  }
}

/** Whether each actor takes any request, as its protocol says (protocols.ts): the compiler holds
 * each entry to the actor's map, so a protocol that gains or loses its last kind changes it. */
const TAKES_REQUESTS: { [Name in ActorName]: [KindOf<Name>] extends [never] ? false : true } = {
  'replica-store': true,
  coordinator: true,
  iam: true,
  gossiper: true,
  'hint-queue': true,
  scrubber: true,
  'anti-entropy': true,
  lifecycle: true,
  'http-ingress': true,
  'grpc-ingress': false,
}

/** Refuses a table whose links do not hold: each joins two different actors of the table, once,
 * and goes to an actor whose protocol takes requests. Thrown at load, not at a first message. */
export function checkLinks(table: ActorTable): void {
  const seen = new Set<string>()
  for (const [from, to] of table.links) {
    const link = `${from} -> ${to}`
    for (const end of [from, to]) {
      if (!table.actors.includes(end)) throw new Error(`link ${link}: ${end} is not in the table`)
    }
    if (from === to) throw new Error(`link ${link}: an actor does not call itself`)
    if (!TAKES_REQUESTS[to]) throw new Error(`link ${link}: ${to} takes no request`)
    if (seen.has(link)) throw new Error(`link ${link}: listed twice`)
    seen.add(link)
  }
}
