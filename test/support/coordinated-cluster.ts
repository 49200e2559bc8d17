/** @module Three cluster nodes in the test's own thread, for the coordinator's quorum logic: n1,
 * n2 and n3 each run the real replica-store on fake-context's MemoryKv and MemoryBlobs, and n1
 * also runs the real coordinator (RF 3, W 2, R 2). Every effect stays in the fakes, on one shared
 * manual clock:
 * - the coordinator's `call('replica-store')` reaches n1's store, `call('gossiper')` answers a
 *   membership view whose statuses the test sets (as the stores' own calls do);
 * - `peers.call`, `openWrite` and `callForBody` of any node go to the target store's `handle`
 *   as a PeerRequestMsg naming the caller in `from`, their bodies on the fake's memory streams,
 *   the one stream object standing for both ends (a Replica.Read's range is asked of the store's
 *   sink once its answer is ok, as the transport does; a failed Write or Read fails the stream);
 * - a cut node answers `unavailable` to every call and reaches no one (killed or partitioned,
 *   whatever gossip says); a held node runs what it is asked at once and keeps its answers of the
 *   matching kinds until the test releases them (a slow replica).
 * Every request reaching a store is recorded in `asked`, so a test can say who was asked what. */
import assert from 'node:assert/strict'
import { coordinator } from '../../actors/coordinator/coordinator.js'
import { replicaStore, type StoreState } from '../../actors/replica-store/replica-store.js'
import { handle, type StreamHandle } from '../../protocol/actor.js'
import type {
  BodyRange,
  Member,
  MemberStatus,
  PeerMethod,
  PeerRequestMsg,
  PeerTarget,
} from '../../protocol/cluster.js'
import { fail, type Result } from '../../protocol/errors.js'
import type { MembershipView } from '../../protocol/membership.js'
import type { CoordinatorMsg, StoreMsg } from '../../protocol/messages.js'
import { fakeContext, ManualClock, MemoryStream, type FakeContext } from './fake-context.js'

export const NODE_IDS = ['n1', 'n2', 'n3'] as const
export type NodeId = (typeof NODE_IDS)[number]

export const POOL_NAME = 'p1'
const POOL_NODES = NODE_IDS.map((id, index) => `${id}:127.0.0.1:${index + 1}`).join(',')
/** How long a request sent by a test may take, on the fake clock. */
const REQUEST_MS = 60_000
/** Turns of the event loop `settle` lets pass: enough for a chain of calls across the nodes and
 * the kv's landings (one macrotask each). */
const SETTLE_TURNS = 40
/** Turns `drive` waits for a request at most, whatever the clock steps. */
const DRIVE_TURNS_MAX = 5_000

type Distribute<T> = T extends unknown ? Omit<T, 'requestId' | 'deadlineMs'> : never
/** A message without the request id and deadline the harness adds. */
export type Body<M> = Distribute<M>

type CoordinatorState = Awaited<ReturnType<typeof coordinator.init>>

export interface StoreNode {
  id: NodeId
  ctx: FakeContext
  state: StoreState
}

interface Hold {
  node: NodeId
  kinds: ReadonlySet<string> | null
  released: Promise<void>
  /** Answers kept now. */
  waiting: number
}

/** One request a store was given: by which node (n1 for its own coordinator too), and what. */
export interface Asked {
  node: NodeId
  from: NodeId
  kind: string
}

/** The kind a request carries: a Replica.* call's inner message, else the peer method. */
function kindOf(method: PeerMethod, body: object): string {
  const inner = (body as { msg?: { kind?: unknown } }).msg?.kind
  return method.startsWith('Replica.') && typeof inner === 'string' ? inner : method
}

export class CoordinatedCluster {
  readonly clock = new ManualClock()
  readonly stores = new Map<NodeId, StoreNode>()
  readonly status = new Map<NodeId, MemberStatus>(NODE_IDS.map((id) => [id, 'Alive']))
  readonly asked: Asked[] = []
  private readonly cuts = new Set<NodeId>()
  private readonly holds: Hold[] = []
  private coordinatorCtx: FakeContext | null = null
  private coordinatorState: CoordinatorState | null = null

  /** Three stores (each first pulling the catalog, so all serve) and n1's coordinator, whose
   * settings `config` adds to (SVC_GC_GRACE_DAYS, say). */
  static async start(config: Record<string, string> = {}): Promise<CoordinatedCluster> {
    const cluster = new CoordinatedCluster()
    for (const id of NODE_IDS) await cluster.startStore(id)
    const ctx = fakeContext({
      self: 'coordinator',
      clock: cluster.clock,
      seed: 100,
      config: {
        SVC_MODE: 'cluster',
        SVC_NODE_ID: 'n1',
        SVC_POOL_NAME: POOL_NAME,
        SVC_POOL_NODES: POOL_NODES,
        SVC_REPLICATION_FACTOR: '3',
        SVC_WRITE_QUORUM: '2',
        SVC_READ_QUORUM: '2',
        ...config,
      },
    })
    ctx.onCall((to, msg) => {
      if (to === 'replica-store') return cluster.toStore('n1', 'n1', msg as StoreMsg, msg.kind)
      if (to === 'gossiper' && msg.kind === 'membership.view') return cluster.view('n1')
      return fail('unavailable', `${to} is not wired`)
    })
    ctx.onPeerCall((to, method, body, stream, deadlineMs) =>
      cluster.deliver('n1', to, method, body, stream, deadlineMs),
    )
    cluster.coordinatorCtx = ctx
    cluster.coordinatorState = await coordinator.init(ctx)
    cluster.clock.advance(0)
    await cluster.settle()
    return cluster
  }

  private async startStore(id: NodeId): Promise<void> {
    const ctx = fakeContext({
      clock: this.clock,
      seed: NODE_IDS.indexOf(id) + 1,
      config: { SVC_MODE: 'cluster', SVC_NODE_ID: id },
    })
    ctx.onCall((to, msg) => {
      if (to === 'gossiper' && msg.kind === 'membership.view') return this.view(id)
      if (to === 'gossiper' || to === 'iam') return { ok: true, value: null }
      return fail('unavailable', `${to} is not wired`)
    })
    ctx.onPeerCall((to, method, body, stream, deadlineMs) =>
      this.deliver(id, to, method, body, stream, deadlineMs),
    )
    this.stores.set(id, { id, ctx, state: await replicaStore.init(ctx) })
  }

  store(id: NodeId): StoreNode {
    return this.stores.get(id) as StoreNode
  }

  get coordinatorContext(): FakeContext {
    assert(this.coordinatorCtx !== null)
    return this.coordinatorCtx
  }

  private member(id: NodeId): Member {
    return {
      id,
      kind: 'node',
      pool: POOL_NAME,
      poolHash: 'h',
      httpAddr: `${id}:9000`,
      grpcAddr: `${id}:9100`,
      incarnation: 1,
      status: this.status.get(id) ?? 'Dead',
      phase: 'serving',
      version: '0',
      freeBytes: 1,
      wallMs: 0,
    }
  }

  private view(self: NodeId): Result<MembershipView> {
    const members = NODE_IDS.map((id) => ({ ...this.member(id), skewMs: 0 }))
    return { ok: true, value: { self: this.member(self), members, maxClockSkewMs: 0 } }
  }

  /** The node answers `unavailable` to everything and reaches no one until `heal`. */
  cut(id: NodeId): void {
    this.cuts.add(id)
  }

  heal(id: NodeId): void {
    this.cuts.delete(id)
  }

  /** What gossip says of a node; the coordinator sees it once its cached view expires (0.5 s). */
  setStatus(id: NodeId, status: MemberStatus): void {
    this.status.set(id, status)
  }

  /** Keeps `id`'s answers (of these kinds only, when named) until the returned release is called;
   * `waiting()` says how many it keeps now. */
  hold(id: NodeId, kinds?: readonly string[]): { release: () => void; waiting: () => number } {
    let release = (): void => undefined
    const released = new Promise<void>((resolve) => (release = resolve))
    const hold: Hold = { node: id, kinds: kinds ? new Set(kinds) : null, released, waiting: 0 }
    this.holds.push(hold)
    return {
      release: () => {
        const at = this.holds.indexOf(hold)
        if (at >= 0) this.holds.splice(at, 1)
        release()
      },
      waiting: () => hold.waiting,
    }
  }

  /** Runs `msg` on `id`'s store for `from`, unless either is cut; then keeps the answer while a
   * hold of that node and kind lasts. */
  private async toStore(
    id: NodeId,
    from: NodeId,
    msg: StoreMsg,
    kind: string,
  ): Promise<Result<unknown>> {
    if (this.cuts.has(id) || this.cuts.has(from)) return fail('unavailable', `${id} unreachable`)
    this.asked.push({ node: id, from, kind })
    const node = this.store(id)
    const answer = await handle(replicaStore, node.state, msg, node.ctx)
    for (const hold of this.holds.filter((one) => one.node === id)) {
      if (hold.kinds !== null && !hold.kinds.has(kind)) continue
      hold.waiting++
      await hold.released
      hold.waiting--
    }
    return answer
  }

  /** A call of node `from` to another node, as the transport carries it. */
  private async deliver(
    from: NodeId,
    to: PeerTarget,
    method: PeerMethod,
    body: object,
    stream: StreamHandle | undefined,
    deadlineMs: number,
  ): Promise<Result<unknown>> {
    const id = NODE_IDS.find((one) => one === to.id)
    if (id === undefined) return fail('unavailable', `no node ${String(to.id)}`)
    const call: PeerRequestMsg = {
      kind: 'peer.request',
      method,
      from,
      body,
      requestId: 'peer',
      deadlineMs,
      ...(stream === undefined ? {} : { stream }),
    }
    const answer = await this.toStore(id, from, call, kindOf(method, body))
    if (stream === undefined) return answer
    assert(stream instanceof MemoryStream)
    if (!answer.ok) {
      // The transport fails the caller's stream with the call.
      if (method === 'Replica.Read') stream.abort(answer.code, answer.detail)
      else stream.cancel(answer.code, answer.detail)
    } else if (method === 'Replica.Read') {
      const range = (body as { range?: BodyRange }).range
      assert(range !== undefined, 'a Replica.Read names its range')
      stream.request(range.start, range.end)
    }
    return answer
  }

  /** Sends a request to n1's coordinator. */
  send<T>(body: Body<CoordinatorMsg>): Promise<Result<T>> {
    assert(this.coordinatorState !== null && this.coordinatorCtx !== null)
    const deadlineMs = this.clock.nowMs + REQUEST_MS
    const msg = { ...body, requestId: 'test', deadlineMs } as CoordinatorMsg
    return handle(coordinator, this.coordinatorState, msg, this.coordinatorCtx) as Promise<
      Result<T>
    >
  }

  /** Sends a request straight to one node's store, as the test (bypassing the coordinator). */
  sendTo<T>(id: NodeId, body: Body<StoreMsg>): Promise<Result<T>> {
    const node = this.store(id)
    const msg = { ...body, requestId: 'test', deadlineMs: this.clock.nowMs + REQUEST_MS }
    return handle(replicaStore, node.state, msg as StoreMsg, node.ctx) as Promise<Result<T>>
  }

  /** Moves the shared clock, firing every actor's timers that fall due. */
  advance(ms: number): void {
    this.clock.advance(ms)
  }

  /** Lets every pending call, answer and kv landing run, the clock standing still. */
  async settle(): Promise<void> {
    for (let turn = 0; turn < SETTLE_TURNS; turn++) {
      await new Promise((resolve) => setImmediate(resolve))
      this.clock.advance(0)
    }
    for (const node of this.stores.values()) {
      for (let round = 0; round < SETTLE_TURNS && node.state.tasks.size > 0; round++) {
        await Promise.allSettled([...node.state.tasks])
      }
    }
  }

  /** Waits for `request`, moving the clock `stepMs` each turn of the event loop (for requests
   * that wait on the clock: a conditional write's retry pause, a hedge). */
  async drive<T>(request: Promise<T>, stepMs: number): Promise<T> {
    let done = false
    void request.then(
      () => (done = true),
      () => (done = true),
    )
    for (let turn = 0; turn < DRIVE_TURNS_MAX && !done; turn++) {
      await new Promise((resolve) => setImmediate(resolve))
      this.clock.advance(stepMs)
    }
    assert(done, `the request did not finish in ${DRIVE_TURNS_MAX} turns`)
    return request
  }
}
