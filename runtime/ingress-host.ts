/** @module The http-ingress actor: hosts the Hono app of http/ on @hono/node-server (HTTPS when
 * SVC_TLS_CERT and SVC_TLS_KEY name PEM files) inside its worker thread, and gives it the Mesh:
 * calls to other actors, streams, and the supervisor's services (chaos kills, metrics of every
 * actor merged into one Prometheus text). Stop: refuse new connections, let in-flight requests
 * finish within SHUTDOWN_DRAIN_MS, then cut what is left. */
import { readFileSync } from 'node:fs'
import { createServer as createHttpsServer } from 'node:https'
import type { Server } from 'node:http'
import type { MessagePort } from 'node:worker_threads'
import { serve } from '@hono/node-server'
import * as Comlink from 'comlink'
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs'
import { AggregatorRegistry, Counter, Gauge, Registry } from 'prom-client'
import { createFetch, type Fetch, type IngressState } from '../http/app.js'
import type { Actor, Context, Mesh } from '../protocol/actor.js'
import { ok, unreachable } from '../protocol/errors.js'
import type { IngressMsg } from '../protocol/messages.js'
import type { KeyCache } from '../http/s3/key-cache.js'
import { HttpMetrics } from './http-metrics.js'
import { SHUTDOWN_DRAIN_MS } from './knobs.js'
import type { SupervisorApi } from './supervisor.js'
import { withTimeout } from './timeout.js'

/** Bounds how long a client may take to send its headers; bodies are bounded by stream timeouts. */
const HEADERS_TIMEOUT_MS = 60_000
/** A socket with no traffic for this long is closed. */
const SOCKET_IDLE_TIMEOUT_MS = 120_000

interface IngressActorState extends IngressState {
  server: Server
  keys: KeyCache
}

export const httpIngress: Actor<IngressActorState, IngressMsg> = {
  name: 'http-ingress',
  async init(ctx) {
    const supervisorPort = (ctx as Context & { supervisor: MessagePort }).supervisor
    const supervisor = Comlink.wrap<SupervisorApi>(nodeEndpoint(supervisorPort as never))
    const http = new HttpMetrics()
    const mesh: Mesh = {
      call: ctx.call,
      openStream: ctx.openStream,
      source: ctx.source,
      sink: ctx.sink,
      now: ctx.now,
      randomBytes: ctx.randomBytes,
      log: ctx.log,
      config: ctx.config,
      kill: (actor) => supervisor.kill(actor),
      observeRequest: (sample) => http.observe(sample),
      metricsText: () => metricsText(supervisor, http),
    }
    const state = { serving: false } as IngressActorState
    const { fetch, keys } = createFetch(mesh, state)
    state.keys = keys
    state.server = await listen(ctx, fetch)
    state.serving = true
    return state
  },
  handle(state, msg) {
    switch (msg.kind) {
      case 'ingress.forget-key':
        state.keys.forget(msg.accessKey, msg.generation)
        return ok(null)
      default:
        return unreachable(msg.kind)
    }
  },
  async stop(state) {
    state.serving = false
    const closed = new Promise<void>((resolve) => state.server.close(() => resolve()))
    state.server.closeIdleConnections()
    try {
      await withTimeout(closed, SHUTDOWN_DRAIN_MS, 'draining in-flight requests')
    } catch {
      state.server.closeAllConnections()
    }
  },
}

function listen(ctx: Context, fetch: Fetch): Promise<Server> {
  const port = Number(ctx.config['SVC_HTTP_PORT'])
  const hostname = ctx.config['SVC_HTTP_HOST'] ?? '0.0.0.0'
  const cert = ctx.config['SVC_TLS_CERT']
  const key = ctx.config['SVC_TLS_KEY']
  const tls =
    cert !== undefined && key !== undefined
      ? {
          createServer: createHttpsServer,
          serverOptions: { cert: readFileSync(cert), key: readFileSync(key) },
        }
      : {}
  return new Promise((resolve, reject) => {
    const server = serve({
      fetch: fetch as never,
      port,
      hostname,
      autoCleanupIncoming: false,
      ...tls,
    }) as Server
    server.headersTimeout = HEADERS_TIMEOUT_MS
    server.requestTimeout = 0 // Bodies are bounded by the stream idle timeout instead.
    server.setTimeout(SOCKET_IDLE_TIMEOUT_MS)
    server.once('error', reject)
    server.once('listening', () => {
      server.off('error', reject)
      ctx.log.info({ hostname, port, tls: cert !== undefined }, 'listening')
      resolve(server)
    })
  })
}

async function metricsText(
  supervisor: Comlink.Remote<SupervisorApi>,
  http: HttpMetrics,
): Promise<string> {
  const gathered = await supervisor.gatherMetrics()
  const node = new Registry()
  const up = new Gauge({
    name: 'svc_actor_up',
    help: 'Whether the actor is running',
    labelNames: ['actor'],
    registers: [node],
  })
  // A fresh registry per scrape: the counter starts at 0 and takes the supervisor's count.
  const restarts = new Counter({
    name: 'svc_actor_restarts_total',
    help: 'Restarts of the actor by its supervisor',
    labelNames: ['actor'],
    registers: [node],
  })
  for (const [actor, isUp] of Object.entries(gathered.up)) up.set({ actor }, isUp ? 1 : 0)
  for (const [actor, count] of Object.entries(gathered.restarts)) restarts.inc({ actor }, count)
  const merged = AggregatorRegistry.aggregate(gathered.actors as never)
  return (await http.registry.metrics()) + (await node.metrics()) + (await merged.metrics())
}
