/** @module Supervisor: the main thread's only job. It spawns each actor on its own worker thread in
 * start order, wires the links between them (one MessageChannel per directed link), watches them,
 * and restarts a crashed actor one-for-one with exponential backoff. Peers of a dead actor are told
 * at once, so their calls fail fast with `unavailable`; after the restart only that actor's links
 * are rewired. More than RESTART_INTENSITY restarts of one actor within RESTART_PERIOD_MS is a
 * crash loop: the node stops cleanly and exits non-zero. It also serves the actors' requests to
 * the node (chaos kills, gathering metrics) over a comlink port per actor. */
import { MessageChannel, Worker } from 'node:worker_threads'
import * as Comlink from 'comlink'
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs'
import type { ActorName } from '../protocol/actor.js'
import {
  ACTOR_START_TIMEOUT_MS,
  ACTOR_STOP_TIMEOUT_MS,
  METRICS_GATHER_TIMEOUT_MS,
  RESTART_BACKOFF_MS_MAX,
  RESTART_BACKOFF_MS_MIN,
  RESTART_INTENSITY,
  RESTART_PERIOD_MS,
  WORKER_YOUNG_GENERATION_MB,
} from './knobs.js'
import type { Logger } from '../protocol/actor.js'
import type { HostApi, HostData } from './thread-host.js'
import { withTimeout } from './timeout.js'
import type { MetricsJson } from './actor-metrics.js'

export interface SupervisorApi {
  /** Terminates an actor's thread abruptly (chaos testing). False if chaos is off or unknown. */
  kill(actor: string): Promise<boolean>
  /** Metrics text of every live actor, and which actors are up, for /metrics. */
  gatherMetrics(): Promise<{
    actors: MetricsJson[]
    up: Record<string, boolean>
    restarts: Record<string, number>
  }>
  /** Begins the graceful stop of the node (SIGTERM path), as if the signal arrived. */
  shutdown(): void
}

interface Child {
  name: ActorName
  worker: Worker | null
  api: Comlink.Remote<HostApi> | null
  up: boolean
  restartTimes: number[]
  restartsTotal: number
  stopping: boolean
}

export interface SupervisorOptions {
  actors: readonly ActorName[]
  links: readonly (readonly [ActorName, ActorName])[]
  config: Record<string, string>
  chaos: boolean
  log: Logger
  /** Called once when the node must stop: a crash loop (code 1) or a shutdown request (code 0). */
  onEscalate: (exitCode: number, reason: string) => void
}

export class Supervisor {
  private readonly children = new Map<ActorName, Child>()
  private stopping = false

  constructor(private readonly options: SupervisorOptions) {
    for (const name of options.actors) {
      this.children.set(name, {
        name,
        worker: null,
        api: null,
        up: false,
        restartTimes: [],
        restartsTotal: 0,
        stopping: false,
      })
    }
  }

  async start(): Promise<void> {
    for (const name of this.options.actors) await this.spawn(this.child(name))
  }

  /** Stops actors in reverse start order; each gets ACTOR_STOP_TIMEOUT_MS (the ingress gets its own
   * drain time inside its stop), then is terminated. */
  async stop(drainMs: number): Promise<void> {
    this.stopping = true
    for (const name of [...this.options.actors].reverse()) {
      const child = this.child(name)
      child.stopping = true
      const budget =
        name === 'http-ingress' ? drainMs + ACTOR_STOP_TIMEOUT_MS : ACTOR_STOP_TIMEOUT_MS
      try {
        if (child.api !== null) await withTimeout(child.api.stop(), budget, `stop ${name}`)
      } catch (error) {
        this.options.log.warn({ child: name, err: String(error) }, 'actor did not stop in time')
      }
      await child.worker?.terminate()
      child.up = false
    }
  }

  private child(name: ActorName): Child {
    const child = this.children.get(name)
    if (child === undefined) throw new Error(`unknown actor ${name}`)
    return child
  }

  private async spawn(child: Child): Promise<void> {
    const control = new MessageChannel()
    Comlink.expose(this.api(), nodeEndpoint(control.port1 as never))
    const hostData: HostData = {
      actor: child.name,
      config: this.options.config,
      supervisor: control.port2,
    }
    const worker = new Worker(new URL('./thread-host.js', import.meta.url), {
      workerData: hostData,
      transferList: [control.port2],
      resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
    })
    const api = Comlink.wrap<HostApi>(nodeEndpoint(worker as never))
    child.worker = worker
    child.api = api
    child.stopping = false
    worker.on('error', (error) => {
      this.options.log.error({ child: child.name, err: String(error) }, 'actor crashed')
    })
    worker.once('exit', (code) => {
      control.port1.close()
      this.onExit(child, worker, code)
    })
    await this.wire(child)
    await withTimeout(api.ready(), ACTOR_START_TIMEOUT_MS, `start ${child.name}`)
    if (child.worker === worker) child.up = true
    this.options.log.info({ child: child.name }, 'actor up')
  }

  /** Creates a fresh channel for every link of this actor whose other end is alive. */
  private async wire(child: Child): Promise<void> {
    for (const [caller, callee] of this.options.links) {
      if (caller !== child.name && callee !== child.name) continue
      const callerChild = this.child(caller)
      const calleeChild = this.child(callee)
      if (callerChild.api === null || calleeChild.api === null) continue
      const { port1, port2 } = new MessageChannel()
      await calleeChild.api.connect(caller, 'server', Comlink.transfer(port2, [port2]))
      await callerChild.api.connect(callee, 'caller', Comlink.transfer(port1, [port1]))
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
      if (callee === child.name) void this.child(caller).api?.disconnect(callee)
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
    const backoffMs = Math.min(
      RESTART_BACKOFF_MS_MAX,
      RESTART_BACKOFF_MS_MIN * 2 ** (child.restartTimes.length - 1),
    )
    setTimeout(() => {
      if (this.stopping) return
      this.spawn(child).catch((error: unknown) => {
        this.options.log.error({ child: child.name, err: String(error) }, 'restart failed')
        void child.worker?.terminate()
      })
    }, backoffMs)
  }

  private api(): SupervisorApi {
    return {
      kill: async (actor) => {
        if (!this.options.chaos) return false
        const child = this.children.get(actor as ActorName)
        if (child?.worker == null) return false
        const worker = child.worker
        // Let the caller's reply leave first when the victim is the ingress that carries it.
        setTimeout(() => void worker.terminate(), 20)
        return true
      },
      gatherMetrics: async () => {
        const actors: MetricsJson[] = []
        const up: Record<string, boolean> = {}
        const restarts: Record<string, number> = {}
        for (const child of this.children.values()) {
          up[child.name] = child.up
          restarts[child.name] = child.restartsTotal
          if (child.api === null || !child.up) continue
          try {
            actors.push(
              await withTimeout(child.api.metrics(), METRICS_GATHER_TIMEOUT_MS, 'metrics'),
            )
          } catch {
            up[child.name] = false
          }
        }
        return { actors, up, restarts }
      },
      shutdown: () => this.options.onEscalate(0, 'shutdown requested'),
    }
  }
}
