/** @module Thread host: the entry of every actor's worker thread. It loads the actor, builds its
 * Context (links to peers, streams, timers, for replica-store the RocksDB and blob adapters, and
 * in cluster and gateway modes `peers` over gRPC, made at first use and cut by `setPartitioned`),
 * runs `init`, then serves requests through a bounded mailbox: past MAILBOX_DEPTH_MAX requests in
 * progress a request is answered `busy` at once, and a request already past its deadline is dropped
 * as `timeout`. The supervisor drives it over a comlink control channel (connect, disconnect,
 * stop). An assertion failure inside a handler crashes the thread: the supervisor restarts it. An
 * EnvironmentError from `init` (a port in use, a data directory it cannot write) is reported to
 * the supervisor instead, which stops the node: a restart would meet the same environment. */
import { AssertionError } from 'node:assert'
import { randomBytes } from 'node:crypto'
import { parentPort, workerData, type MessagePort } from 'node:worker_threads'
import * as Comlink from 'comlink'
import type { Registry } from 'prom-client'
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs'
import {
  handle,
  type ActorName,
  type BlobFiles,
  type Context,
  type KvReader,
  type KvStore,
  type ShardLocks,
  type PasswordHasher,
  type StreamHandle,
} from '../protocol/actor.js'
import type { KindOf, MessageOf, ReplyOf } from '../protocol/protocols.js'
import type {
  BodyRange,
  BodyReadingMethod,
  PeerMethod,
  Peers,
  PeerTarget,
} from '../protocol/cluster.js'
import { fail, ok, ServiceError, type Result } from '../protocol/errors.js'
import type { DeleteManyResult, StoreMsg } from '../protocol/messages.js'
import { EnvironmentError } from '../protocol/environment-error.js'
import { Mailbox } from './mailbox.js'
import { loadActor } from './actor-table.js'
import { MAILBOX_DEPTH_MAX } from './knobs.js'
import { CallerLink, serveLink, undelivered, type Dispatch } from './link.js'
import { createLogger } from './log.js'
import { FrameSink } from './cluster/frame-sink.js'
import type { GrpcPeers } from './cluster/grpc-peers.js'
import { peerBytesRegistry } from './cluster/peer-bytes.js'
import { openStorage } from './storage.js'
import { SharedShardLocks } from './shard-locks.js'
import {
  EVERY_SHARD_KINDS,
  joinDeleteMany,
  shardInstance,
  type StoreMemory,
  shardOfInstance,
  splitDeleteMany,
  storeShardOf,
} from './store-shards.js'
import { attachKvReader } from './rocks-kv.js'
import { openStream, PortSink, PortSource } from './stream-port.js'
import { ActorMetrics, type MetricsJson } from './actor-metrics.js'
import { PASSWORD_TASK_TIMEOUT_MS } from './knobs.js'
import type { SupervisorApi } from './supervisor.js'
import { withTimeout } from '../protocol/timing.js'

/** The context the runtime gives its own actors (the ingresses): also the supervisor's services, a
 * way to add a registry of its own to the metrics this thread reports, and whether a peer node is
 * cut off by a partition (the gRPC server drops its calls). */
export type HostContext = Context & {
  supervisor: Comlink.Remote<SupervisorApi>
  /** Reads of the node's metadata database (the runtime's handle): a single node's ingresses'
   * only, null elsewhere. */
  metadata: KvReader | null
  includeMetrics(registry: Registry): void
  isPartitioned(nodeId: string): boolean
}

export interface HostData {
  actor: ActorName
  /** This instance's name: the role's, or `<role>-<n>` when the role runs several. */
  instance: string
  config: Record<string, string>
  /** The handle of the metadata database the runtime opened (null on a gateway). */
  metadata: bigint | null
  /** Memory the store's shards share: their locks (runtime/shard-locks.ts) and the count of
   * bytes they wrote (runtime/data-volume.ts). */
  storeMemory: StoreMemory
  /** Port on which the supervisor serves requests from actors (chaos, metrics of the node). */
  supervisor: MessagePort
}

export interface HostApi {
  /** A link to one instance of a peer role: this actor calls it, or serves it. */
  connect(peerRole: ActorName, peer: string, end: 'caller' | 'server', port: MessagePort): void
  disconnect(peerRole: ActorName, peer: string): void
  /** True once `init` is done; false when it failed for an environment reason, which the actor has
   * reported to the supervisor's `fatal` (any other failure crashes the thread). */
  ready(): Promise<boolean>
  stop(): Promise<void>
  metrics(): Promise<MetricsJson>
  /** Cuts this thread off from these peer nodes (their calls and answers are dropped both ways,
   * as a cut network would); [] heals. The supervisor sends it to every thread. */
  setPartitioned(ids: readonly string[]): void
}

const data = workerData as HostData
const log = createLogger(data.instance)
const supervisor = Comlink.wrap<SupervisorApi>(nodeEndpoint(data.supervisor as never))
const metrics = new ActorMetrics(data.instance)
/** Links this actor calls on, by peer role: one per instance (`link.peer` names it). An array, so
 * that a call, on every request's path, picks its link without copying anything. */
const callers = new Map<ActorName, CallerLink[]>()
/** Spreads calls over the instances of a role that runs several. */
let nextInstance = 0
/** The store's threads and a cluster node's coordinators: a request to either goes to the
 * instance that owns its key. */
const storeShards = Number(data.config['SVC_STORE_SHARDS'] ?? '1')
const KEYED_ROLES: ReadonlyMap<ActorName, number> = new Map<ActorName, number>([
  ['replica-store', storeShards],
  ['coordinator', Number(data.config['SVC_COORDINATORS'] ?? '1')],
])
const servedPorts: MessagePort[] = []
let dispatcher: Dispatch | null = null
let stopActor: () => Promise<void> = () => Promise.resolve()
/** Peer nodes this thread is cut off from (chaos partitions). */
let partitioned: ReadonlySet<string> = new Set()
/** This thread's way to other nodes in cluster and gateway modes, made at first use. */
let grpcPeers: GrpcPeers | null = null
/** Makes it, once gRPC's modules are loaded: in cluster and gateway modes only, since they are a
 * good part of a thread's start and a single node never calls a peer. */
let makeGrpcPeers: (() => GrpcPeers) | null = null
/** Loads them, once; null in single mode. */
let loadGrpc: (() => Promise<void>) | null = null

/** Actors that call peers from their start, or open writes to them (whose sink is handed back at
 * once), load gRPC's modules at start; the others (iam, scrubber, hint-queue, the ingresses; most
 * never call a peer, and grpc-ingress loads its own) at their first call. */
const PEERS_AT_START: ReadonlySet<ActorName> = new Set<ActorName>([
  'coordinator',
  'gossiper',
  'replica-store',
  'anti-entropy',
])

function owned(handle: bigint | null): bigint {
  if (handle === null) throw new AssertionError({ message: 'the node has no metadata database' })
  return handle
}

function notOwned(what: string): never {
  throw new AssertionError({ message: `${data.actor} does not own the ${what}` })
}

async function main(): Promise<void> {
  const mode = data.config['SVC_MODE'] ?? 'single'
  // Any thread may call peers, and grpc-ingress answers them: each counts what it sent.
  if (mode === 'cluster' || mode === 'gateway') {
    metrics.include(peerBytesRegistry)
    let loading: Promise<void> | null = null
    loadGrpc = () =>
      (loading ??= Promise.all([
        import('./cluster/grpc-peers.js'),
        import('./cluster/grpc-service.js'),
      ]).then(([{ GrpcPeers }, { logGrpcTo }]) => {
        makeGrpcPeers = () => {
          logGrpcTo(log)
          return GrpcPeers.fromConfig(data.config, log)
        }
      }))
    if (PEERS_AT_START.has(data.actor)) await loadGrpc()
  }
  const actor = await loadActor(data.actor)
  const storage =
    data.actor === 'replica-store'
      ? await openStorage(data.config, log, owned(data.metadata), {
          keepsReserve: shardOfInstance(data.instance) === 0,
          written: data.storeMemory.written,
          writerName: data.instance.replace('replica-store', 'kv-writer'),
        })
      : null
  // A single node's ingress serves small objects from the database itself; a cluster's reads go
  // through its coordinator's quorum.
  const metadata =
    data.actor === 'http-ingress' && mode === 'single' && data.metadata !== null
      ? await attachKvReader(data.metadata)
      : null
  const kv: KvStore = storage?.kv ?? new Proxy({} as KvStore, { get: () => notOwned('kv store') })
  const blobs: BlobFiles =
    storage?.blobs ?? new Proxy({} as BlobFiles, { get: () => notOwned('blob files') })
  const ctx: HostContext = {
    self: data.actor,
    now: () => Date.now(),
    randomBytes: (length) => new Uint8Array(randomBytes(length)),
    call(to, msg) {
      const keyed = KEYED_ROLES.get(to)
      if (keyed !== undefined && keyed > 1) return callKeyed(to, keyed, msg as StoreMsg) as never
      const links = callers.get(to) ?? []
      const link = links[links.length === 1 ? 0 : nextInstance++ % links.length]
      if (link === undefined) return undelivered(msg, 'unavailable', `${to} is down`)
      return link.call(msg)
    },
    callEach<To extends ActorName, K extends KindOf<To>>(
      to: To,
      msg: MessageOf<To, K> & { kind: K },
    ) {
      return Promise.all((callers.get(to) ?? []).map((link) => link.call<ReplyOf<To, K>>(msg)))
    },
    after: (ms, task) => {
      const timer = setTimeout(task, ms)
      return () => clearTimeout(timer)
    },
    kv,
    blobs,
    shardLocks:
      data.actor === 'replica-store'
        ? new SharedShardLocks(data.storeMemory.locks, shardOfInstance(data.instance), storeShards)
        : new Proxy({} as ShardLocks, { get: () => notOwned('shard locks') }),
    passwords: poolPasswords(supervisor),
    get peers() {
      return threadPeers()
    },
    openStream,
    source: (handle) => new PortSource(handle),
    sink: (handle) => new PortSink(handle),
    log,
    config: data.config,
    supervisor,
    metadata,
    includeMetrics: (registry) => metrics.include(registry),
    isPartitioned: (nodeId) => partitioned.has(nodeId),
  }
  const state = await actor.init(ctx)
  const mailbox = new Mailbox(
    {
      actor: data.actor,
      depthMax: MAILBOX_DEPTH_MAX,
      now: () => Date.now(),
      metrics,
      onCrash: crash,
      onFailure: (error, kind) => log.error({ err: error, kind }, 'handler failed'),
    },
    (msg) => handle(actor, state, msg as never, ctx),
  )
  const dispatch: Dispatch = (msg) => mailbox.deliver(msg)
  dispatcher = dispatch
  stopActor = async () => {
    await actor.stop?.(state, ctx)
    await storage?.close()
    grpcPeers?.close()
  }
  for (const port of servedPorts.splice(0)) serveLink(port, dispatch)
}

/** A request to a role of several instances by key (a sharded store, a cluster node's
 * coordinators) goes to the instance that owns its key (runtime/store-shards.ts); a delete of many
 * keys to each instance that owns some of them, its answers joined. */
async function callKeyed(role: ActorName, count: number, msg: StoreMsg): Promise<Result<unknown>> {
  if (EVERY_SHARD_KINDS.has(msg.kind)) {
    const shards = Array.from({ length: count }, (_, shard) => shard)
    const answers = await Promise.all(shards.map((shard) => callInstance(role, shard, count, msg)))
    return answers.find((answer) => !answer.ok) ?? ok(null)
  }
  if (msg.kind !== 'object.delete-many') {
    return callInstance(role, storeShardOf(msg, count), count, msg)
  }
  const parts = splitDeleteMany(msg, count)
  const answers = await Promise.all(
    parts.map(([shard, part]) => callInstance<DeleteManyResult>(role, shard, count, part)),
  )
  return joinDeleteMany(
    parts.map(([, part]) => part),
    answers,
  )
}

function callInstance<T>(
  role: ActorName,
  shard: number,
  count: number,
  msg: StoreMsg,
): Promise<Result<T>> {
  const name = shardInstance(role, shard, count)
  const link = callers.get(role)?.find((each) => each.peer === name)
  if (link === undefined) return undelivered(msg, 'unavailable', `${name} is down`)
  return link.call<T>(msg)
}

/** gRPC in cluster and gateway modes, made when an actor first calls a peer (most threads never
 * do); a single node has no peers. */
function threadPeers(): Peers {
  if (loadGrpc === null) return singleNodePeers
  if (makeGrpcPeers === null) return peersOnceLoaded
  if (grpcPeers === null) {
    grpcPeers = makeGrpcPeers()
    grpcPeers.setPartitioned([...partitioned])
  }
  return grpcPeers
}

/** Peers of a thread that has not loaded gRPC yet: a call loads it first. */
const peersOnceLoaded: Peers = {
  call: <T>(to: PeerTarget, method: PeerMethod, body: object, deadlineMs: number) =>
    loadedPeers().then((peers) => peers.call<T>(to, method, body, deadlineMs)),
  openWrite() {
    throw new AssertionError({ message: `${data.actor} opens peer writes: load gRPC at its start` })
  },
  callForBody: <T>(
    to: PeerTarget,
    method: BodyReadingMethod,
    body: object & { range?: BodyRange },
    sink: StreamHandle,
    deadlineMs: number,
  ) => loadedPeers().then((peers) => peers.callForBody<T>(to, method, body, sink, deadlineMs)),
}

async function loadedPeers(): Promise<Peers> {
  await loadGrpc?.()
  return threadPeers()
}

/** A single node has no peers: every call fails at once. */
const singleNodePeers: Peers = {
  call: (to) => noPeer(to),
  openWrite(to) {
    const sink = FrameSink.refused('unavailable', 'single mode: no peers')
    return { sink, answer: noPeer(to) }
  },
  callForBody(to, _method, _body, sink) {
    new PortSink(sink).abort('unavailable', 'single mode: no peers')
    return noPeer(to)
  },
}

function noPeer(to: PeerTarget): Promise<Result<never>> {
  return Promise.resolve(fail('unavailable', `single mode: no peer at ${to.grpcAddr}`))
}

/** argon2 runs on the supervisor's pool, not here: a kill of this thread mid-hash would otherwise
 * abort the process. The pool bounds each task; the extra second covers the hop. */
function poolPasswords(supervisor: Comlink.Remote<SupervisorApi>): PasswordHasher {
  const answer = async <T>(call: Promise<Result<T>>): Promise<T> => {
    const result = await withTimeout(call, PASSWORD_TASK_TIMEOUT_MS + 1_000, 'password pool')
    if (!result.ok) throw new ServiceError(result.code, result.detail)
    return result.value
  }
  return {
    hash: (password, salt) => answer(supervisor.hashPassword(password, salt)),
    verify: (storedHash, password) => answer(supervisor.verifyPassword(storedHash, password)),
  }
}

/** A programmer error: let the thread die so the supervisor restarts it with fresh state. */
function crash(error: unknown): void {
  log.error({ err: error }, 'assertion failed: crashing the actor')
  setImmediate(() => {
    throw error
  })
}

let markReady: (ready: boolean) => void = () => undefined
const readyPromise = new Promise<boolean>((resolve) => {
  markReady = resolve
})

/** Closes the link to `peer` (its pending calls fail `unavailable`); returns the role's others. */
function dropLink(peerRole: ActorName, peer: string, reason: string): CallerLink[] {
  const links = callers.get(peerRole) ?? []
  for (const link of links) if (link.peer === peer) link.close(reason)
  return links.filter((link) => link.peer !== peer)
}

// The control channel exists before init, because the supervisor connects links while init runs
// (iam reads from replica-store during init); requests to this actor wait in their ports until
// init is done, and `ready` resolves then.
const api: HostApi = {
  connect(peerRole, peer, end, port) {
    if (end === 'caller') {
      const others = dropLink(peerRole, peer, 'rewired')
      callers.set(peerRole, [...others, new CallerLink(port, peer)])
    } else if (dispatcher !== null) {
      serveLink(port, dispatcher)
    } else {
      servedPorts.push(port)
    }
  },
  disconnect(peerRole, peer) {
    callers.set(peerRole, dropLink(peerRole, peer, 'restarting'))
  },
  ready: () => readyPromise,
  stop: () => stopActor(),
  metrics: () => metrics.json(),
  setPartitioned(ids) {
    partitioned = new Set(ids)
    grpcPeers?.setPartitioned(ids)
  },
}
Comlink.expose(api, nodeEndpoint(parentPort as never))

main().then(
  () => markReady(true),
  (error: unknown) => {
    if (error instanceof EnvironmentError) {
      // No stack and no crash: the supervisor prints the one line and stops the node.
      supervisor.fatal(data.instance, error.variable, error.reason).then(
        () => markReady(false),
        () => markReady(false),
      )
      return
    }
    log.error({ err: error }, 'actor failed to start')
    setImmediate(() => {
      throw error
    })
  },
)
