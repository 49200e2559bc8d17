/** @module The http-ingress actor: serves the request listener of http/app.ts on node:http
 * (HTTPS when SVC_TLS_CERT and SVC_TLS_KEY name PEM files) inside its worker thread, one of
 * SVC_HTTP_WORKERS that share the port (each on its own SO_REUSEPORT socket), and gives it
 * the Mesh: calls to other actors, streams, and the supervisor's services (chaos kills, metrics of
 * every actor merged into one Prometheus text, with the node's and the store's). It listens
 * before the other actors start and serves once the supervisor says every actor is up; until then
 * every request answers 503. Stop: answer 503 to new requests while the ones admitted earlier
 * finish (at most SHUTDOWN_DRAIN_MS), so that health checks see the node leave; then close the
 * port and cut what is left. */
import { LentWriteSink } from './lent-write-sink.js'
import { readCurrent } from '../actors/replica-store/local-read.js'
import { createServer as createHttpsServer } from 'node:https'
import { createServer as createHttpServer, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type * as Comlink from 'comlink'
import { AggregatorRegistry, Counter, Gauge, Registry } from 'prom-client'
import { createListener, type IngressState, type Listener } from '../http/app.js'
import type {
  Actor,
  ActorHealth,
  Context,
  Mesh,
  NodeFigures,
  VolumeStatus,
} from '../protocol/actor.js'
import { actorTable } from './actor-table.js'
import { actorHealthOf, nodeFiguresOf } from './node-figures.js'
import { ok, unreachable } from '../protocol/errors.js'
import type { IngressMsg } from '../protocol/messages.js'
import { createGatewayListener } from '../http/gateway.js'
import { KeyCache } from '../http/s3/key-cache.js'
import { readVolumeStatus, SAMPLE_INTERVAL_MS as VOLUME_LOOK_MS } from './data-volume.js'
import { clusterMetricsText } from './cluster-metrics.js'
import { lifecycleMetricsText } from './lifecycle-metrics.js'
import { scrubberMetricsText } from './scrubber-metrics.js'
import { HttpMetrics } from './http-metrics.js'
import { METRICS_GATHER_TIMEOUT_MS, SHUTDOWN_DRAIN_MS } from './knobs.js'
import type { GatheredMetrics, SupervisorApi } from './supervisor.js'
import type { HostContext } from './thread-host.js'
import { storeMetricsText } from './store-metrics.js'
import { listenFailure } from './listen-failure.js'
import { LoanSource } from './blob-loan.js'
import { clientAddressKey } from './cluster/cluster-key.js'
import { CALL_TIMEOUT_MS, withTimeout } from '../protocol/timing.js'
import { readTlsPair } from './tls-files.js'
import { volumeMetricsText } from './volume-metrics.js'

/** Bounds how long a client may take to send its headers; bodies are bounded by stream timeouts. */
const HEADERS_TIMEOUT_MS = 60_000
/** A socket with no traffic for this long is closed. */
const SOCKET_IDLE_TIMEOUT_MS = 120_000
/** The supervisor bounds each actor's answer by METRICS_GATHER_TIMEOUT_MS; this bounds the whole
 * exchange with it, so a scrape never hangs on the main thread. */
const METRICS_SCRAPE_TIMEOUT_MS = METRICS_GATHER_TIMEOUT_MS + 1_000
/** Once the port is closed, connections still open after this long are cut. */
const CLOSE_TIMEOUT_MS = 1_000
/** How long a stopping cluster node serves on after telling gossip, before it drains. */
export const STOPPING_NOTICE_MS = 3_000

interface IngressActorState extends IngressState {
  server: Server
  keys: KeyCache
  /** Set when the stop begins: a late `started` answer must not reopen the gate. */
  stopping: boolean
  /** Requests admitted while serving whose response has not closed yet. */
  inFlight: number
  /** Resolves the drain of a stop once inFlight reaches 0. */
  onDrained: (() => void) | null
}

export const httpIngress: Actor<IngressActorState, 'http-ingress'> = {
  name: 'http-ingress',
  async init(ctx) {
    const host = ctx as HostContext
    const supervisor = host.supervisor
    const volumeStatus = cachedVolumeStatus(ctx.config['SVC_DATA_DIR'] ?? './data')
    const http = new HttpMetrics()
    // Reported with this thread's actor metrics, so /metrics adds up every ingress instance's.
    host.includeMetrics(http.registry)
    const mesh: Mesh = {
      call: ctx.call,
      callEach: ctx.callEach,
      openStream: ctx.openStream,
      source: ctx.source,
      sink: ctx.sink,
      readCurrent: (bucket, key, withBody) =>
        host.metadata === null ? null : readCurrent(host.metadata, bucket, key, withBody),
      readReplica(read, range, deadlineMs) {
        const [mine, theirs] = ctx.openStream()
        const body = { msg: read.msg, range }
        return {
          answer: ctx.peers.callForBody(read.target, 'Replica.Read', body, theirs, deadlineMs),
          source: ctx.source(mine, deadlineMs),
        }
      },
      lentWriteSink: (handle, size, checksums) =>
        new LentWriteSink(handle, size, checksums, ctx.now),
      now: ctx.now,
      randomBytes: ctx.randomBytes,
      log: ctx.log,
      config: ctx.config,
      kill: (actor, downMs) => supervisor.kill(actor, downMs),
      observeRequest: (sample) => http.observe(sample),
      metricsText: async () => {
        // A volume that cannot be looked at leaves its gauges out, not the scrape. A gateway has
        // no data directory: it exports none.
        const volume =
          ctx.config['SVC_MODE'] === 'gateway'
            ? Promise.resolve('')
            : volumeStatus().then(volumeMetricsText, () => '')
        // A single node's scrubber reports the cluster's three scrubber series too (SPEC.md).
        const cluster =
          ctx.config['SVC_MODE'] === 'single' ? scrubberMetricsText(mesh) : clusterMetricsText(mesh)
        const lifecycle =
          ctx.config['SVC_MODE'] === 'gateway' ? Promise.resolve('') : lifecycleMetricsText(mesh)
        const [text, gauges, clusterText, lifecycleText] = await Promise.all([
          metricsText(supervisor, mesh),
          volume,
          cluster,
          lifecycle,
        ])
        return text + gauges + clusterText + lifecycleText
      },
      volumeStatus,
      actorHealth: () => actorHealth(supervisor),
      nodeFigures: () => nodeFigures(supervisor, ctx.config['SVC_MODE']),
      partition: (peers) => supervisor.partition([...peers]),
      lentSource: (lent, deadlineMs) =>
        new LoanSource(lent, deadlineMs, ctx.now, (why) => {
          // Recorded as the store's own reads record damage; the answer is only its receipt.
          void ctx.call('replica-store', {
            kind: 'blob.damaged',
            sha256: lent.sha256,
            why,
            requestId: 'lent-read',
            deadlineMs: ctx.now() + CALL_TIMEOUT_MS,
          })
        }),
    }
    const state = {
      serving: false,
      stopping: false,
      inFlight: 0,
      onDrained: null,
    } as Omit<IngressActorState, 'server' | 'keys'> as IngressActorState
    const hostname = ctx.config['SVC_HTTP_HOST'] ?? '0.0.0.0'
    // A gateway forwards requests to the storage nodes; it has no keys to cache. It vouches for
    // its clients' addresses with the client address key, and a cluster node checks them with it.
    const mode = ctx.config['SVC_MODE']
    const addressKey = mode === 'single' ? null : clientAddressKey(ctx.config)
    const { listener, keys } =
      mode === 'gateway' && addressKey !== null
        ? {
            listener: createGatewayListener(mesh, state, http.registry, addressKey),
            keys: new KeyCache(),
          }
        : createListener(mesh, state, hostname, addressKey)
    state.keys = keys
    state.server = await listen(ctx, hostname, listener)
    // Awaited: the next instance starts once this one is ready, and must see the port.
    await supervisor.listening((state.server.address() as AddressInfo).port)
    countInFlight(state)
    // Not awaited: init must end for the supervisor to start the other actors. A restarted
    // ingress gets its answer at once.
    supervisor.started().then(
      (started) => {
        if (started && !state.stopping) state.serving = true
      },
      (error: unknown) => ctx.log.error({ err: error }, 'no start signal from the supervisor'),
    )
    return state
  },
  handlers: {
    'ingress.forget-key': (state, msg) => {
      state.keys.forget(msg.accessKey, msg.generation)
      return ok(null)
    },
  },
  async stop(state, ctx) {
    if (ctx.config['SVC_MODE'] === 'cluster') await announceStopping(ctx)
    state.stopping = true
    state.serving = false
    // The port stays open while admitted requests finish: new ones (health checks included) are
    // answered 503 with `connection: close`, which tells a load balancer the node is leaving.
    if (state.inFlight > 0) {
      const drained = new Promise<void>((resolve) => {
        state.onDrained = resolve
      })
      try {
        await withTimeout(drained, SHUTDOWN_DRAIN_MS, 'draining in-flight requests')
      } catch {
        ctx.log.warn({ inFlight: state.inFlight }, 'cutting requests that did not finish')
      }
    }
    const closed = new Promise<void>((resolve) => state.server.close(() => resolve()))
    state.server.closeIdleConnections()
    try {
      await withTimeout(closed, CLOSE_TIMEOUT_MS, 'closing the port')
    } catch {
      state.server.closeAllConnections()
    }
  },
}

/** A cluster node that stops first tells gossip (phase `stopping`), so that gateways stop sending
 * it requests, and serves on for STOPPING_NOTICE_MS while the news spreads (a probe a second, and
 * a gateway's view at most a second old); only then does it refuse new requests and drain. Refused
 * at once, the requests still routed here would each cost its client a retry; with the notice,
 * clients through a gateway see none. */
async function announceStopping(ctx: Context): Promise<void> {
  const told = await ctx.call('gossiper', {
    kind: 'membership.update-self',
    phase: 'stopping',
    requestId: 'stopping',
    deadlineMs: ctx.now() + STOPPING_NOTICE_MS,
  })
  if (!told.ok) return
  await new Promise<void>((resolve) => ctx.after(STOPPING_NOTICE_MS, resolve))
}

/** Counts the requests admitted while the node serves until their response closes (sent, or the
 * client went away), so that a stop knows when they are done. Runs before the app sees the
 * request, with the same view of `serving`. */
function countInFlight(state: IngressActorState): void {
  state.server.prependListener('request', (_request, response: ServerResponse) => {
    if (!state.serving) return
    state.inFlight++
    response.once('close', () => {
      state.inFlight--
      if (state.inFlight === 0) state.onDrained?.()
    })
  })
}

/** Every ingress thread listens on the node's address with SO_REUSEPORT when there are several
 * (`reusePort`, Node >= 22.12), and the kernel spreads new connections over their sockets. A
 * thread's socket closes with it, so no connection waits on a dead thread. */
async function listen(ctx: Context, hostname: string, listener: Listener): Promise<Server> {
  const cert = ctx.config['SVC_TLS_CERT']
  const key = ctx.config['SVC_TLS_KEY']
  const server: Server =
    cert !== undefined && key !== undefined
      ? createHttpsServer(readTlsPair(cert, key), listener)
      : createHttpServer(listener)
  // S3 ignores an Expect it does not know (or an empty one); Node would answer 417 without it.
  server.on('checkExpectation', listener)
  server.headersTimeout = HEADERS_TIMEOUT_MS
  server.requestTimeout = 0 // Bodies are bounded by the stream idle timeout instead.
  server.setTimeout(SOCKET_IDLE_TIMEOUT_MS)
  const port = Number(ctx.config['SVC_HTTP_PORT'])
  const workers = Number(ctx.config['SVC_HTTP_WORKERS'] ?? '1')
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.once('listening', () => {
      server.off('error', reject)
      resolve()
    })
    server.listen({ port, host: hostname, reusePort: workers > 1 })
  }).catch((error: unknown) => {
    throw listenFailure(error, hostname, port)
  })
  const bound = (server.address() as AddressInfo).port
  ctx.log.info({ hostname, port: bound, tls: cert !== undefined, workers }, 'listening')
  return server
}

/** Every actor's metrics and liveness from the supervisor, bounded: a scrape never hangs on the
 * main thread. */
function gather(supervisor: Comlink.Remote<SupervisorApi>): Promise<GatheredMetrics> {
  return withTimeout(supervisor.gatherMetrics(), METRICS_SCRAPE_TIMEOUT_MS, 'gathering metrics')
}

/** The supervisor's gathering and the store's figures run at once, each under its own bound. */
async function metricsText(supervisor: Comlink.Remote<SupervisorApi>, mesh: Mesh): Promise<string> {
  const [gathered, store] = await Promise.all([gather(supervisor), storeMetricsText(mesh)])
  const liveness = new Registry()
  const up = new Gauge({
    name: 'svc_actor_up',
    help: 'Whether the actor is running',
    labelNames: ['actor'],
    registers: [liveness],
  })
  // A fresh registry per scrape: the counter starts at 0 and takes the supervisor's count.
  const restarts = new Counter({
    name: 'svc_actor_restarts_total',
    help: 'Restarts of the actor by its supervisor',
    labelNames: ['actor'],
    registers: [liveness],
  })
  const cpu = new Counter({
    name: 'svc_actor_cpu_seconds_total',
    help: "CPU seconds (user and system) of the actor's threads, restarts included",
    labelNames: ['actor'],
    registers: [liveness],
  })
  for (const [actor, isUp] of Object.entries(gathered.up)) up.set({ actor }, isUp ? 1 : 0)
  for (const [actor, count] of Object.entries(gathered.restarts)) restarts.inc({ actor }, count)
  for (const [actor, seconds] of Object.entries(gathered.cpuSeconds)) cpu.inc({ actor }, seconds)
  const merged = AggregatorRegistry.aggregate(gathered.actors as never)
  return (await liveness.metrics()) + gathered.node + store + (await merged.metrics())
}

/** Every actor's liveness, restarts and mailbox depth, from one gathering of their metrics. */
async function actorHealth(
  supervisor: Comlink.Remote<SupervisorApi>,
): Promise<Record<string, ActorHealth>> {
  return actorHealthOf(await gather(supervisor))
}

/** Every actor's figures, the links of the node's actor table and its HTTP totals. */
async function nodeFigures(
  supervisor: Comlink.Remote<SupervisorApi>,
  mode: string | undefined,
): Promise<NodeFigures> {
  const table = actorTable(mode === 'cluster' || mode === 'gateway' ? mode : 'single')
  return nodeFiguresOf(await gather(supervisor), table.links, table.actors)
}

/** The data volume's status, looked at again when the last look is over VOLUME_LOOK_MS old: a
 * load balancer may probe /health often, and one look a second is enough to follow the volume. */
function cachedVolumeStatus(dataDir: string): () => Promise<VolumeStatus> {
  let last: { atMs: number; status: Promise<VolumeStatus> } | null = null
  return () => {
    const now = Date.now()
    if (last === null || now - last.atMs > VOLUME_LOOK_MS) {
      const status = readVolumeStatus(dataDir)
      last = { atMs: now, status }
      // A failed look is not kept: the next call looks again.
      status.catch(() => {
        if (last?.status === status) last = null
      })
    }
    return last.status
  }
}
