/** @module One simulated node: the real actors of a cluster node (replica-store, coordinator, iam,
 * gossiper, hint-queue, scrubber) on contexts whose every effect goes through the simulation: the
 * clock is virtual time plus the node's skew, randomness comes from the seed, timers and calls
 * between actors are events of the scheduler (each hop between threads a small random delay), the
 * kv and blob files are in memory, and calls to other nodes go through the simulated network.
 * Each actor gets its requests through the runtime's own Mailbox (bounded, deadlines, a thrown
 * assertion is a crash), as on a worker thread.
 *
 * A crash of an actor drops its state and its timers, fails the calls it was handling and the
 * other ends of the streams it held with `unavailable` (as a dead thread's are), and starts it
 * again after the supervisor's backoff, on the same kv (a thread's death loses nothing the store
 * handed to RocksDB). A crash of the node does that to every actor at once and keeps only what
 * was durable: the kv's landed batches and the blob files as they were (a file not yet promoted
 * may keep some of its unsynced bytes). */
import { AssertionError } from 'node:assert'
import { antiEntropy } from '../../actors/anti-entropy/anti-entropy.js'
import { coordinator } from '../../actors/coordinator/coordinator.js'
import { gossiper } from '../../actors/gossiper/gossiper.js'
import { hintQueue } from '../../actors/hint-queue/hint-queue.js'
import { iam } from '../../actors/iam/iam.js'
import { replicaStore } from '../../actors/replica-store/replica-store.js'
import { scrubber } from '../../actors/scrubber/scrubber.js'
import {
  handle,
  type Actor,
  type ActorName,
  type AnyMsg,
  type BlobFiles,
  type Context,
  type KvStore,
  type PasswordHasher,
} from '../../protocol/actor.js'
import { fail, ServiceError, type Result } from '../../protocol/errors.js'
import type { ActorMetrics } from '../../runtime/actor-metrics.js'
import {
  MAILBOX_DEPTH_MAX,
  RESTART_BACKOFF_MS_MAX,
  RESTART_BACKOFF_MS_MIN,
} from '../../runtime/knobs.js'
import { Mailbox } from '../../runtime/mailbox.js'
import { MemoryBlobs, MemoryKv, memoryStream, type MemoryStream } from '../support/fake-context.js'
import { createHash } from 'node:crypto'
import type { SimRandom } from './random.js'
import type { Owner, Scheduler } from './scheduler.js'
import type { SimNetwork } from './network.js'
import type { Trace } from './trace.js'
import { soleShardLocks } from '../../runtime/shard-locks.js'

/** The actors of a storage node, in the order the supervisor starts them. */
export const SIM_ACTORS = [
  'replica-store',
  'coordinator',
  'iam',
  'gossiper',
  'hint-queue',
  'scrubber',
  'anti-entropy',
] as const
export type SimActorName = (typeof SIM_ACTORS)[number]

const ACTORS: Record<SimActorName, Actor<unknown, never>> = {
  'replica-store': replicaStore as unknown as Actor<unknown, never>,
  coordinator: coordinator as unknown as Actor<unknown, never>,
  iam: iam as unknown as Actor<unknown, never>,
  gossiper: gossiper as unknown as Actor<unknown, never>,
  'hint-queue': hintQueue as unknown as Actor<unknown, never>,
  scrubber: scrubber as unknown as Actor<unknown, never>,
  'anti-entropy': antiEntropy as unknown as Actor<unknown, never>,
}

/** A hop between two threads of a node: postMessage and a turn of the receiver's loop. */
const THREAD_HOP_MS_MAX = 0.3

/** The mailbox counts into metrics nobody reads here: counters that count nothing, and no timer
 * (prom-client's reads the real clock). */
const NO_METRICS = {
  depth: { set: () => undefined },
  handled: { inc: () => undefined },
  rejected: { inc: () => undefined },
  expired: { inc: () => undefined },
  duration: { startTimer: () => () => 0 },
} as unknown as ActorMetrics

/** argon2id costs real time on the CPU pool and completes in the real event loop, out of the
 * simulation's order; here a password hash is SHA-256 over salt and password, the same on every
 * run. iam's code above it is the real one. */
const SIM_PASSWORDS: PasswordHasher = {
  hash: (password, salt) =>
    Promise.resolve(`sim$${Buffer.from(salt).toString('hex')}$${digest(salt, password)}`),
  verify: (stored, password) => {
    const [tag, salt, hash] = stored.split('$')
    if (tag !== 'sim' || salt === undefined || hash === undefined) return Promise.resolve(false)
    return Promise.resolve(digest(Buffer.from(salt, 'hex'), password) === hash)
  },
}

function digest(salt: Uint8Array, password: string): string {
  return createHash('sha256').update(salt).update(password).digest('hex')
}

interface RunningActor {
  owner: Owner
  mailbox: Mailbox | null
  state: unknown
  /** Calls this actor is handling, to fail with `unavailable` when it dies. */
  handling: Set<(answer: Result<unknown>) => void>
  /** The stream ends it took (ctx.sink, ctx.source): a dead thread's ports close, which fails
   * the other ends. Kept for the actor's life, a run's worth at most. */
  streams: Map<MemoryStream, 'sink' | 'source'>
  restarts: number
}

export class SimNode {
  kv: MemoryKv
  blobs = new MemoryBlobs()
  /** The node's one store shard's locks, which outlive its store's crashes as a node's do. */
  readonly shardLocks = soleShardLocks()
  /** The node's life: every event of a node that crashed belongs to a dead owner. */
  life: Owner = { alive: false }
  readonly actors = new Map<SimActorName, RunningActor>()
  /** How far this node's clock is from virtual time, ms. */
  skewMs = 0
  /** Assertion failures of its actors: programmer errors the run reports. */
  readonly crashes: string[] = []
  private readonly random: SimRandom
  /** Kills armed by crashActorOnRequest, by actor. */
  private readonly armed = new Map<
    SimActorName,
    { kinds: (kind: string) => boolean; afterMs: number; untilMs: number }
  >()

  constructor(
    readonly id: string,
    readonly grpcAddr: string,
    private readonly config: Record<string, string>,
    private readonly scheduler: Scheduler,
    private readonly network: SimNetwork,
    random: SimRandom,
    private readonly trace: Trace,
  ) {
    this.random = random
    this.kv = new MemoryKv(undefined, (task) => this.land(task))
  }

  get up(): boolean {
    return this.life.alive
  }

  /** The node's clock: whole milliseconds, as the system clock gives them. */
  now(): number {
    return Math.floor(this.scheduler.nowMs) + this.skewMs
  }

  /** Starts every actor, in order, each once the one before has started. */
  async start(): Promise<void> {
    this.life = { alive: true }
    this.trace.add(this.scheduler.nowMs, this.id, 'node starts')
    const life = this.life
    for (const name of SIM_ACTORS) {
      if (!life.alive) return
      await this.startActor(name, life)
    }
  }

  /** The node dies at once: its actors and their events, its calls in flight, what the kv had
   * not landed. Its disk stays for `start`. */
  crash(): void {
    if (!this.life.alive) return
    this.trace.add(this.scheduler.nowMs, this.id, 'node crashes')
    this.life.alive = false
    for (const running of this.actors.values()) this.killActor(running)
    this.actors.clear()
    this.network.nodeDied(this.id)
    this.kv = this.kv.durableCopy((task) => this.land(task))
    this.blobs = this.blobs.afterCrash()
    // A file being written is torn: the chunks not yet synced may or may not have reached the disk.
    for (const file of this.blobs.temporary.values()) {
      if (!file.synced) file.chunks.splice(this.random.int(file.chunks.length + 1))
    }
  }

  /** One actor dies (a thread killed); the supervisor starts it again after its backoff. */
  crashActor(name: SimActorName): void {
    const running = this.actors.get(name)
    if (running === undefined || !running.owner.alive) return
    this.trace.add(this.scheduler.nowMs, this.id, `actor ${name} crashes`)
    this.killActor(running)
    this.actors.delete(name)
    const life = this.life
    const backoff = this.random.between(RESTART_BACKOFF_MS_MIN, RESTART_BACKOFF_MS_MAX)
    this.scheduler.after(backoff, () => void this.startActor(name, life), life)
  }

  /** Delivers a request to one of this node's actors, after a hop; `unavailable` when it is not
   * running. The caller's deadline bounds the wait (the runtime's link answers `timeout`). */
  deliver(to: SimActorName, msg: AnyMsg, caller: Owner): Promise<Result<unknown>> {
    return new Promise((resolve) => {
      let done = false
      const answer = (result: Result<unknown>): void => {
        if (done) return
        done = true
        this.scheduler.after(this.hop(), () => resolve(result), caller)
      }
      const deadlineIn = msg.deadlineMs - this.now()
      this.scheduler.after(
        Math.max(0, deadlineIn),
        () => answer(fail('timeout', `${to} did not answer ${msg.kind} in time`)),
        caller,
      )
      this.scheduler.after(
        this.hop(),
        () => {
          const running = this.actors.get(to)
          if (running === undefined || running.mailbox === null || !running.owner.alive) {
            answer(fail('unavailable', `${to} is not running on ${this.id}`))
            return
          }
          running.handling.add(answer)
          const armed = this.armed.get(to)
          if (
            armed !== undefined &&
            armed.kinds(msg.kind) &&
            this.scheduler.nowMs < armed.untilMs
          ) {
            this.armed.delete(to)
            this.scheduler.after(armed.afterMs, () => this.crashActor(to), this.life)
          }
          void running.mailbox.deliver(msg).then((result) => {
            running.handling.delete(answer)
            if (running.owner.alive) answer(result)
          })
        },
        caller,
      )
    })
  }

  /** Kills the actor `name` `afterMs` after it next takes a request that `kinds` matches, while it
   * handles it (a chaos kill that lands mid-write), if that comes before virtual time `untilMs`. */
  crashActorOnRequest(
    name: SimActorName,
    kinds: (kind: string) => boolean,
    afterMs: number,
    untilMs: number,
  ): void {
    this.armed.set(name, { kinds, afterMs, untilMs })
  }

  /** What one of this node's actors holds, for the checks (undefined when it is not running). */
  stateOf(name: SimActorName): unknown {
    return this.actors.get(name)?.state
  }

  private hop(): number {
    return this.random.float() * THREAD_HOP_MS_MAX
  }

  private land(task: () => void): void {
    // A batch reaches stable storage a little later; a crash before then loses it.
    this.scheduler.after(this.random.float() * 2, task, this.life)
  }

  private killActor(running: RunningActor): void {
    running.owner.alive = false
    for (const answer of [...running.handling]) answer(fail('unavailable', 'the actor died'))
    running.handling.clear()
    // As stream-port.ts's ends do when their port closes: a stream it sent on fails at its
    // receiver, one it read is cancelled at its sender (a stream that ended keeps its outcome).
    for (const [stream, end] of running.streams) {
      if (end === 'sink') stream.asSink().abort('unavailable', 'stream peer gone')
      else stream.cancel('unavailable', 'stream peer gone')
    }
    running.streams.clear()
  }

  private async startActor(name: SimActorName, life: Owner): Promise<void> {
    if (!life.alive) return
    const owner: Owner = { alive: true }
    const previous = this.actors.get(name)
    const running: RunningActor = {
      owner,
      mailbox: null,
      state: null,
      handling: new Set(),
      streams: new Map(),
      restarts: (previous?.restarts ?? -1) + 1,
    }
    this.actors.set(name, running)
    const actor = ACTORS[name]
    const ctx = this.contextOf(name, running)
    let state: unknown
    try {
      state = await actor.init(ctx)
    } catch (error) {
      if (!owner.alive) return
      // A start that fails for want of another actor (the store restarting) is retried by the
      // supervisor; a failed assertion is a programmer error.
      if (error instanceof AssertionError) this.crashes.push(`${this.id}/${name} init: ${error}`)
      this.trace.add(this.scheduler.nowMs, this.id, `actor ${name} failed to start: ${error}`)
      this.crashActor(name)
      return
    }
    if (!owner.alive) return
    running.state = state
    running.mailbox = new Mailbox(
      {
        actor: name,
        depthMax: MAILBOX_DEPTH_MAX,
        now: () => this.now(),
        metrics: NO_METRICS,
        onCrash: (error: AssertionError) => {
          this.crashes.push(`${this.id}/${name}: ${error.message}`)
          this.crashActor(name)
        },
        onFailure: (error, kind) => {
          this.crashes.push(`${this.id}/${name} failed on ${kind}: ${String(error)}`)
        },
      },
      (msg) => handle(actor, state, msg as never, ctx),
    )
  }

  private contextOf(self: SimActorName, running: RunningActor): Context {
    const { owner, streams } = running
    const take = (handle: unknown, end: 'sink' | 'source'): MemoryStream => {
      const stream = streamOf(handle)
      streams.set(stream, end)
      return stream
    }
    const scheduler = this.scheduler
    const randomBytes = (length: number): Uint8Array => this.random.bytes(length)
    const ctx: Context = {
      self,
      now: () => this.now(),
      randomBytes,
      call: <T>(to: ActorName, msg: AnyMsg): Promise<Result<T>> => {
        if (!owner.alive) return new Promise(() => undefined)
        if (!(SIM_ACTORS as readonly string[]).includes(to)) {
          return Promise.resolve(fail<T>('unavailable', `no ${to} in the simulation`))
        }
        return this.deliver(to as SimActorName, msg, owner) as Promise<Result<T>>
      },
      // Only the HTTP ingress runs several instances; the simulation has none.
      callEach: () => Promise.resolve([]),
      after: (ms, task) => scheduler.after(ms, task, owner),
      kv: guardedKv(this.kv, owner),
      blobs: guardedBlobs(this.blobs, owner),
      shardLocks: this.shardLocks,
      passwords: SIM_PASSWORDS,
      peers: this.network.peersOf(this, owner),
      openStream: () => {
        const stream = memoryStream()
        return [stream.handle, stream.handle]
      },
      source: (handle) => take(handle, 'source').asSource(),
      sink: (handle) => take(handle, 'sink').asSink(),
      log: {
        info: () => undefined,
        warn: (fields, message) =>
          this.trace.add(scheduler.nowMs, this.id, `${self} warn: ${message}`, fields),
        error: (fields, message) =>
          this.trace.add(scheduler.nowMs, this.id, `${self} error: ${message}`, fields),
        notice: () => undefined,
      },
      config: this.config,
    }
    return ctx
  }
}

/** A promise that never settles: the effect of an actor that died, which a killed thread never
 * makes. */
function never<T>(): Promise<T> {
  return new Promise<T>(() => undefined)
}

/** The node's kv as one actor's context sees it: once the actor died, its writes never happen. */
function guardedKv(kv: MemoryKv, owner: Owner): KvStore {
  return {
    get: (key) => kv.get(key),
    getMany: (keys) => kv.getMany(keys),
    scan: (range) => kv.scan(range),
    scanText: (range) => kv.scanText(range),
    commit: (ops) => (owner.alive ? kv.commit(ops) : never()),
  }
}

/** The node's blob files as one actor's context sees them: nothing changes after its death. */
function guardedBlobs(blobs: MemoryBlobs, owner: Owner): BlobFiles {
  const alive = <T>(effect: () => Promise<T>): Promise<T> => (owner.alive ? effect() : never())
  return {
    create: (id) =>
      alive(async () => {
        const writer = await blobs.create(id)
        return {
          write: (chunk, written) => alive(() => writer.write(chunk, written)),
          commit: () => alive(() => writer.commit()),
          discard: () => alive(() => writer.discard()),
        }
      }),
    promote: (id) => alive(() => blobs.promote(id)),
    open: (id) => alive(() => blobs.open(id)),
    remove: (id) => alive(() => blobs.remove(id)),
    listTemporary: () => alive(() => blobs.listTemporary()),
    removeTemporary: (id) => alive(() => blobs.removeTemporary(id)),
    admits: () => alive(() => blobs.admits()),
  }
}

function streamOf(handle: unknown): MemoryStream {
  if (typeof handle !== 'object' || handle === null || !('asSource' in handle)) {
    throw new ServiceError('internal', 'a stream handle the simulation did not make')
  }
  return handle as MemoryStream
}
