/** @module Supervisor: the main thread's only job. It spawns each actor on its own worker thread in
 * start order, wires the links between them (one MessageChannel per directed link), watches them,
 * and restarts a crashed actor one-for-one with exponential backoff. Peers of a dead actor are told
 * at once, so their calls fail fast with `unavailable`; after the restart only that actor's links
 * are rewired. More than RESTART_INTENSITY restarts of one actor within RESTART_PERIOD_MS is a
 * crash loop: the node stops cleanly and exits non-zero. An actor whose `init` fails for an
 * environment reason (protocol/environment-error.ts) reports it through `fatal` and is not
 * restarted: the node stops (`onFatal`), at start or at run time. It also serves the actors'
 * requests to the node (chaos kills, gathering metrics, whether the node has started) over a
 * comlink port per actor. The ingress, the actor that faces clients, is spawned before the others
 * and stopped before them: its port answers 503 while the node starts and while it drains, never
 * refuses a health check that the node could answer.
 *
 * A stateless role may run several instances (the ingress: SVC_HTTP_WORKERS threads, each with its
 * own SO_REUSEPORT socket on the node's port). Instances are named `<role>-<n>` from 1 when there
 * are several, and by the role alone when there is one; each is a child of its own with its own
 * restarts, and a link between two roles joins every instance of one to every instance of the
 * other. */
import assert from 'node:assert/strict'
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads'
import * as Comlink from 'comlink'
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs'
import type { ActorName } from '../protocol/actor.js'
import {
  ACTOR_START_TIMEOUT_MS,
  ACTOR_STOP_TIMEOUT_MS,
  CONTROL_CALL_TIMEOUT_MS,
  METRICS_GATHER_TIMEOUT_MS,
  PASSWORD_TASK_TIMEOUT_MS,
  RESTART_BACKOFF_MS_MAX,
  RESTART_BACKOFF_MS_MIN,
  RESTART_INTENSITY,
  RESTART_PERIOD_MS,
  WORKER_YOUNG_GENERATION_MB,
} from './knobs.js'
import type { Logger } from '../protocol/actor.js'
import type { HostApi, HostData } from './thread-host.js'
import type { MetricsJson } from './actor-metrics.js'
import { ThreadCpu } from './node-figures.js'
import type { NodeMetrics } from './node-metrics.js'
import { PasswordPool } from './password-pool.js'
import { createStoreMemory, type StoreMemory } from './store-shards.js'
import type { Result } from '../protocol/errors.js'
import { withTimeout } from '../protocol/timing.js'

/** Rejects once `worker` has exited. Handled here so that a thread nobody is waiting on when it
 * exits raises no unhandled rejection. */
function exitOf(worker: Worker, name: string): Promise<never> {
  const gone = new Promise<never>((_, reject) => {
    worker.once('exit', (code) => reject(new Error(`${name} exited (${code})`)))
  })
  gone.catch(() => undefined)
  return gone
}

/** What one scrape learns from the supervisor: the metrics of every actor that answered in time,
 * which actors are up, how often each has been restarted, and the node's own metrics. */
export interface GatheredMetrics {
  actors: MetricsJson[]
  /** Prometheus text of the metrics kept once per node on this thread (runtime/node-metrics.ts). */
  node: string
  up: Record<string, boolean>
  restarts: Record<string, number>
  /** CPU seconds of each actor's threads since the node started (ThreadCpu). */
  cpuSeconds: Record<string, number>
}

export interface SupervisorApi {
  /** Terminates an actor's thread abruptly (chaos testing): one instance by its name, or every
   * instance of a role by the role's name, and restarts it no sooner than `downMs` after (the usual
   * backoff when that is longer). False if chaos is off or no such actor is running. */
  kill(actor: string, downMs: number): Promise<boolean>
  /** Metrics text of every live actor, and which actors are up, for /metrics. */
  gatherMetrics(): Promise<GatheredMetrics>
  /** Begins the graceful stop of the node (SIGTERM path), as if the signal arrived. */
  shutdown(): void
  /** Resolves true once every actor of the node has started, false if the node stops first. */
  started(): Promise<boolean>
  /** The ingress tells the port it listens on: when the configured port is 0 the first instance
   * lets the kernel choose, and the others (and every restart) must listen on the same one. */
  listening(port: number): void
  /** An actor's `init` failed because of the environment: the node must stop, not restart it. */
  fatal(actor: string, variable: string, reason: string): void
  /** Cluster chaos: every thread drops node-to-node traffic with these peers (none: heals);
   * threads started later drop it too. */
  partition(peers: string[]): Promise<void>
  /** argon2id on the node's password pool (runtime/password-pool.ts), for iam. */
  hashPassword(password: string, salt: Uint8Array): Promise<Result<string>>
  verifyPassword(storedHash: string, password: string): Promise<Result<boolean>>
}

interface Child {
  /** The instance's name: its role's, or `<role>-<n>` when the role runs several. */
  name: string
  role: ActorName
  worker: Worker | null
  api: Comlink.Remote<HostApi> | null
  /** Rejects when the current thread exits: a control call to a dead thread never answers. */
  gone: Promise<never>
  up: boolean
  /** A chaos kill's hold: no restart before this time (ms since the epoch). */
  downUntilMs: number
  restartTimes: number[]
  restartsTotal: number
  /** The CPU of its threads, across restarts. */
  cpu: ThreadCpu
  stopping: boolean
}

export interface SupervisorOptions {
  actors: readonly ActorName[]
  /** How many instances a role runs, for the stateless roles that may run several; 1 otherwise. */
  instances?: Partial<Record<ActorName, number>>
  links: readonly (readonly [ActorName, ActorName])[]
  config: Record<string, string>
  /** The handle of the metadata database, which the runtime opened and closes after the actors
   * stopped (null on a gateway): replica-store and the ingresses attach to it. */
  metadata: bigint | null
  /** The actor that faces clients: spawned first, so that its port answers 503 (not a refused
   * connection) while the others start, and stopped first, so that it drains before they go. */
  ingress: ActorName
  chaos: boolean
  /** The node's own metrics (process-wide figures, build), served with the actors'. */
  metrics: NodeMetrics
  log: Logger
  /** Called once when the node must stop: a crash loop (code 1) or a shutdown request (code 0). */
  onEscalate: (exitCode: number, reason: string) => void
  /** Called when an actor cannot run in this environment; the node must stop. */
  onFatal: (failure: EnvironmentFailure) => void
}

/** An actor's EnvironmentError as it crosses to the main thread (an Error subclass would not). */
export interface EnvironmentFailure {
  actor: string
  variable: string
  reason: string
}

export class Supervisor {
  private readonly children = new Map<string, Child>()
  private readonly byRole = new Map<ActorName, Child[]>()
  /** Outlives every actor thread: a kill never lands on a thread that runs argon2. */
  private readonly passwords = new PasswordPool()
  private stopping = false
  /** What the store's shards share: made once, so that it outlives any shard's thread. */
  private readonly storeMemory: StoreMemory
  /** The ingress first, then the others in the table's order (a store before its readers). */
  private readonly startOrder: readonly ActorName[]
  /** The ingress first (it drains while the others still serve it), then the reverse order. */
  private readonly stopOrder: readonly ActorName[]
  /** Settings every actor gets; the ingress's port is pinned here once it is known. */
  private config: Record<string, string>
  private readonly started: Promise<boolean>
  /** Peers cut off by the chaos route, for every thread, those started later included. */
  private partitioned: string[] = []
  private markStarted: (started: boolean) => void = () => undefined

  constructor(private readonly options: SupervisorOptions) {
    assert(options.actors.includes(options.ingress), options.ingress)
    const others = options.actors.filter((name) => name !== options.ingress)
    this.startOrder = [options.ingress, ...others]
    this.stopOrder = [options.ingress, ...others.reverse()]
    this.config = options.config
    this.storeMemory = createStoreMemory(options.instances?.['replica-store'] ?? 1)
    this.started = new Promise((resolve) => {
      this.markStarted = resolve
    })
    for (const role of options.actors) {
      const count = options.instances?.[role] ?? 1
      assert(Number.isInteger(count) && count >= 1, `${role}: ${count} instances`)
      const instances: Child[] = []
      for (let n = 1; n <= count; n++) {
        const name = count === 1 ? role : `${role}-${n}`
        const child: Child = {
          name,
          role,
          worker: null,
          api: null,
          gone: new Promise<never>(() => undefined),
          up: false,
          downUntilMs: 0,
          restartTimes: [],
          restartsTotal: 0,
          cpu: new ThreadCpu(),
          stopping: false,
        }
        this.children.set(name, child)
        instances.push(child)
      }
      this.byRole.set(role, instances)
    }
  }

  /** Spawns every actor; resolves true once all are up, false if a stop began meanwhile or an
   * actor cannot run in this environment. */
  async start(): Promise<boolean> {
    for (const role of this.startOrder) {
      for (const child of this.instancesOf(role)) {
        if (this.stopping) return false
        if (!(await this.spawn(child))) return false
      }
    }
    if (this.stopping) return false
    this.markStarted(true)
    return true
  }

  /** Stops the ingress first, then the other actors in reverse start order; each gets
   * ACTOR_STOP_TIMEOUT_MS (the ingress gets its own drain time inside its stop), then is
   * terminated. The instances of one role stop together, so their drains overlap. */
  async stop(drainMs: number): Promise<void> {
    this.stopping = true
    this.markStarted(false)
    for (const role of this.stopOrder) {
      const budget =
        role === this.options.ingress ? drainMs + ACTOR_STOP_TIMEOUT_MS : ACTOR_STOP_TIMEOUT_MS
      await Promise.all(this.instancesOf(role).map((child) => this.stopChild(child, budget)))
    }
    try {
      await withTimeout(this.passwords.close(), PASSWORD_TASK_TIMEOUT_MS, 'password pool close')
    } catch (error) {
      this.options.log.warn({ err: String(error) }, 'password pool did not close in time')
    }
  }

  private async stopChild(child: Child, budgetMs: number): Promise<void> {
    child.stopping = true
    try {
      if (child.api !== null) await withTimeout(child.api.stop(), budgetMs, `stop ${child.name}`)
    } catch (error) {
      this.options.log.warn({ child: child.name, err: String(error) }, 'actor did not stop in time')
    }
    await child.worker?.terminate()
    child.up = false
  }

  private instancesOf(role: ActorName): Child[] {
    const instances = this.byRole.get(role)
    if (instances === undefined) throw new Error(`unknown actor ${role}`)
    return instances
  }

  /** Resolves false when the actor reported that it cannot run in this environment. */
  private async spawn(child: Child): Promise<boolean> {
    const control = new MessageChannel()
    Comlink.expose(this.api(), nodeEndpoint(control.port1 as never))
    const hostData: HostData = {
      actor: child.role,
      instance: child.name,
      config: this.config,
      metadata: this.options.metadata,
      storeMemory: this.storeMemory,
      supervisor: control.port2,
    }
    const worker = new Worker(new URL('./thread-host.js', import.meta.url), {
      // The thread's name in /proc and `top -H` (Node names the thread after it).
      name: child.name,
      workerData: hostData,
      transferList: [control.port2],
      resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB[child.role] },
    })
    const api = Comlink.wrap<HostApi>(nodeEndpoint(worker as never))
    child.worker = worker
    child.api = api
    child.gone = exitOf(worker, child.name)
    child.stopping = false
    worker.on('error', (error) => {
      this.options.log.error({ child: child.name, err: String(error) }, 'actor crashed')
    })
    worker.once('exit', (code) => {
      control.port1.close()
      this.onExit(child, worker, code)
    })
    let ready: boolean
    try {
      await this.wire(child)
      ready = await this.control(child, 'start', ACTOR_START_TIMEOUT_MS, (host) => host.ready())
    } catch (error) {
      // It reported `fatal` and its thread ended before `ready` answered: the node is stopping
      // for that reason, which is not a failed start.
      if (child.stopping || this.stopping) return false
      // A start that failed or hangs counts as a crash: the exit restarts it (or ends the start).
      void worker.terminate()
      throw error
    }
    if (!ready) return false // It reported `fatal`: the node is stopping.
    if (this.partitioned.length > 0) await this.tellPartition(child)
    if (child.worker === worker) child.up = true
    this.options.log.info({ child: child.name }, 'actor up')
    return true
  }

  /** A control call to `child`'s current thread, bounded: it fails after `ms`, and at once when the
   * thread exits (comlink never answers a call to a dead thread, and a restart that awaited one
   * would never end). */
  private control<T>(
    child: Child,
    what: string,
    ms: number,
    call: (host: Comlink.Remote<HostApi>) => Promise<T>,
  ): Promise<T> {
    if (child.api === null) return Promise.reject(new Error(`${child.name} is down`))
    const answer = Promise.race([call(child.api), child.gone])
    return withTimeout(answer, ms, `${what} ${child.name}`)
  }

  /** Creates a fresh channel for every link of this actor whose other end is alive: one to each
   * instance of the peer role. */
  private async wire(child: Child): Promise<void> {
    for (const [caller, callee] of this.options.links) {
      const pairs: [Child, Child][] =
        caller === child.role
          ? this.instancesOf(callee).map((peer) => [child, peer])
          : callee === child.role
            ? this.instancesOf(caller).map((peer) => [peer, child])
            : []
      for (const [callerChild, calleeChild] of pairs) {
        const { port1, port2 } = new MessageChannel()
        const served = await this.connect(child, calleeChild, callerChild, 'server', port2)
        // A link with one end only: closing the other tells the end that was given away.
        if (!served || !(await this.connect(child, callerChild, calleeChild, 'caller', port1))) {
          port1.close()
        }
      }
    }
  }

  /** Gives `target` its end of a link to `peer`; false when the link cannot be made now. A failure
   * of the child being wired fails its start. A peer that is down or dies meanwhile is skipped (its
   * own restart wires the link); one that does not answer in time is terminated, for the same. */
  private async connect(
    child: Child,
    target: Child,
    peer: Child,
    end: 'caller' | 'server',
    port: MessagePort,
  ): Promise<boolean> {
    const worker = target.worker
    if (worker === null) return false
    // A thread still starting answers once its modules are loaded, which a loaded machine slows:
    // it gets the start's bound; a running one answers between two turns of its loop.
    const ms = target.up ? CONTROL_CALL_TIMEOUT_MS : ACTOR_START_TIMEOUT_MS
    try {
      const transferred = Comlink.transfer(port, [port])
      await this.control(target, 'connect', ms, (host) =>
        host.connect(peer.role, peer.name, end, transferred),
      )
      return true
    } catch (error) {
      if (target === child) throw error
      this.options.log.warn({ child: target.name, err: String(error) }, 'link not wired')
      if (target.worker === worker) void worker.terminate()
      return false
    }
  }

  private onExit(child: Child, worker: Worker, code: number): void {
    if (child.worker !== worker) return
    child.up = false
    child.worker = null
    child.api = null
    if (child.stopping || this.stopping) return
    this.options.log.error({ child: child.name, code }, 'actor exited; restarting')
    for (const [caller, callee] of this.options.links) {
      if (callee !== child.role) continue
      for (const peer of this.instancesOf(caller)) this.disconnect(peer, child)
    }
    const now = Date.now()
    child.restartTimes = child.restartTimes.filter((t) => now - t < RESTART_PERIOD_MS)
    if (child.restartTimes.length >= RESTART_INTENSITY) {
      const count = child.restartTimes.length
      const reason = `${child.name} restarted ${count} times in ${RESTART_PERIOD_MS} ms`
      this.options.onEscalate(1, reason)
      return
    }
    child.restartTimes.push(now)
    child.restartsTotal++
    child.cpu.ended()
    const backoffMs = Math.max(
      Math.min(
        RESTART_BACKOFF_MS_MAX,
        RESTART_BACKOFF_MS_MIN * 2 ** (child.restartTimes.length - 1),
      ),
      child.downUntilMs - now,
    )
    setTimeout(() => {
      if (this.stopping) return
      this.spawn(child).catch((error: unknown) => {
        // spawn terminated the thread; its exit schedules the next attempt.
        this.options.log.error({ child: child.name, err: String(error) }, 'restart failed')
      })
    }, backoffMs)
  }

  /** Gives `child` the current partition; a thread that does not take it in time is terminated
   * (it would keep talking to the peers it must not reach) and restarts with it. */
  private async tellPartition(child: Child): Promise<void> {
    const worker = child.worker
    const peers = this.partitioned
    try {
      await this.control(child, 'partition', CONTROL_CALL_TIMEOUT_MS, (host) =>
        host.setPartitioned(peers),
      )
    } catch (error) {
      if (child.worker !== worker || worker === null) return
      this.options.log.warn({ child: child.name, err: String(error) }, 'partition not taken')
      void worker.terminate()
    }
  }

  /** Tells `peer` that `dead` died, so its calls there fail now. A peer that is down has no link
   * left to fail; one that does not answer in time is terminated (it serves nobody). */
  private disconnect(peer: Child, dead: Child): void {
    const worker = peer.worker
    if (worker === null) return
    const ms = peer.up ? CONTROL_CALL_TIMEOUT_MS : ACTOR_START_TIMEOUT_MS
    this.control(peer, 'disconnect', ms, (host) => host.disconnect(dead.role, dead.name)).catch(
      (error: unknown) => {
        if (peer.worker !== worker) return
        this.options.log.warn({ child: peer.name, err: String(error) }, 'no answer to disconnect')
        void worker.terminate()
      },
    )
  }

  private api(): SupervisorApi {
    return {
      kill: async (actor, downMs) => {
        if (!this.options.chaos) return false
        const instance = this.children.get(actor)
        const victims = instance ? [instance] : (this.byRole.get(actor as ActorName) ?? [])
        const alive = victims.filter((child) => child.worker !== null)
        // Let the caller's reply leave first when the victim is the ingress that carries it.
        const delayMs = 20
        for (const child of alive) {
          child.downUntilMs = Date.now() + delayMs + downMs
          const worker = child.worker
          setTimeout(() => void worker?.terminate(), delayMs)
        }
        return alive.length > 0
      },
      gatherMetrics: () => this.gatherMetrics(),
      partition: async (peers) => {
        this.partitioned = peers
        const running = [...this.children.values()].filter((child) => child.up)
        await Promise.all(running.map((child) => this.tellPartition(child)))
      },
      shutdown: () => this.options.onEscalate(0, 'shutdown requested'),
      fatal: (actor, variable, reason) => {
        const child = this.children.get(actor)
        // Its thread ends with the node; that exit is not a crash to restart.
        if (child !== undefined) child.stopping = true
        this.options.onFatal({ actor, variable, reason })
      },
      started: () => this.started,
      listening: (port) => {
        if (this.config['SVC_HTTP_PORT'] === '0')
          this.config = { ...this.config, SVC_HTTP_PORT: String(port) }
      },
      hashPassword: (password, salt) => this.passwords.hash(password, salt),
      verifyPassword: (storedHash, password) => this.passwords.verify(storedHash, password),
    }
  }

  /** Asks every live actor at once, each under METRICS_GATHER_TIMEOUT_MS, so one scrape takes at
   * most that long. An actor that is down, or that cannot answer in time (it is dying or its
   * thread is blocked), shows as down and its metrics are left out: the scrape still succeeds. */
  private async gatherMetrics(): Promise<GatheredMetrics> {
    const up: Record<string, boolean> = {}
    const restarts: Record<string, number> = {}
    const cpuSeconds: Record<string, number> = {}
    const answers = [...this.children.values()].map(async (child) => {
      restarts[child.name] = child.restartsTotal
      up[child.name] = child.up
      const worker = child.worker
      if (child.api === null || worker === null || !child.up) {
        cpuSeconds[child.name] = child.cpu.seconds
        return null
      }
      // A thread that is not running (it is dying) keeps its last figure.
      const cpu = withTimeout(worker.cpuUsage(), METRICS_GATHER_TIMEOUT_MS, 'cpu usage').then(
        (usage) => child.cpu.seen(usage.user + usage.system),
        () => undefined,
      )
      try {
        return await withTimeout(child.api.metrics(), METRICS_GATHER_TIMEOUT_MS, 'metrics')
      } catch {
        up[child.name] = false
        return null
      } finally {
        await cpu
        cpuSeconds[child.name] = child.cpu.seconds
      }
    })
    const node = await this.options.metrics.text()
    const actors = (await Promise.all(answers)).filter((json) => json !== null)
    return { actors, node, up, restarts, cpuSeconds }
  }
}
