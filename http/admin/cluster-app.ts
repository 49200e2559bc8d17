/** @module Cluster administration on the HTTP port (CLUSTER-INTERFACE.md): GET
 * /admin/cluster/topology, /admin/cluster/health, /admin/cluster/repair-status (anti-entropy,
 * hints, the scrubber, the bootstrap), /admin/node/health and POST /admin/node/bootstrap (202 and
 * its job), as JSON, for a SuperUser signed in either way the node knows: SigV4 with S3 keys, or
 * an admin bearer token. Membership comes from the gossiper (`membership.view`), the actors' state
 * from the supervisor. With SVC_CHAOS=1, POST and DELETE /admin/chaos/partition cut and heal this
 * node's node-to-node traffic with the peers named. Counts of "nodes" are of storage nodes:
 * gateways hold no data and are listed apart. */
import type { BootstrapJob } from '../../protocol/messages.js'
import type { AntiEntropyStatus } from '../../protocol/anti-entropy.js'
import { Hono } from 'hono'
import type { Mesh } from '../../protocol/actor.js'
import type { Member, MemberStatus } from '../../protocol/cluster.js'
import type { MembershipView } from '../../protocol/membership.js'
import type { HintQueueCounters } from '../../protocol/messages.js'
import type { ScrubberStatus } from '../../protocol/scrubbing.js'
import { fail, isAdminSurfaceCode, ok, type ErrorCode, type Result } from '../../protocol/errors.js'
import { authenticate, type AuthCaches } from '../s3/authenticate.js'
import { newExchange } from '../s3/router.js'
import { EMPTY_SHA256_HEX } from '../s3/sigv4.js'
import { readJsonObject } from './body.js'
import {
  exchangeMiddleware,
  sendCode,
  sendFailure,
  sendJson,
  type AdminContext,
} from './exchange.js'
import { ROUTE_NOT_FOUND } from './errors.js'
import { sendAdminError, type AdminEnv } from './exchange.js'
import { authorizeSuperUser } from './session.js'

/** Above this, clocks disagree enough to warn (SPEC.md section 8). */
export const CLOCK_SKEW_WARN_MS = 500
/** Peers one partition names at most. */
const PARTITION_PEERS_MAX = 64

export async function membershipView(
  mesh: Mesh,
  deadlineMs: number,
): Promise<Result<MembershipView>> {
  return mesh.call('gossiper', {
    kind: 'membership.view',
    requestId: 'admin',
    deadlineMs,
  })
}

/** SigV4 failures that are the request's form, not its credentials: 400 saying what to fix. */
const MALFORMED_SIGNATURE = new Set<ErrorCode>([
  'invalid_request',
  'invalid_argument',
  'authorization_malformed',
])

/** A SuperUser by bearer token, or by SigV4 (the chaos route's way). SigV4 outside S3 sends no
 * x-amz-content-sha256 (curl --aws-sigv4 for another service, say): its canonical request holds
 * the hash of the body, which for a call without a body is the empty one's, so such a call is
 * taken; with a body, the missing header is named in a 400. */
async function superUser(c: AdminContext, mesh: Mesh, caches: AuthCaches): Promise<Result<null>> {
  const header = c.req.header('authorization') ?? ''
  if (/^bearer /i.test(header)) {
    const principal = await authorizeSuperUser(c, mesh)
    return principal.ok ? ok(null) : principal
  }
  const exchange = newExchange(c.env.incoming, c.env.outgoing, mesh)
  const headers = exchange.headers
  const bodiless =
    headers['transfer-encoding'] === undefined && Number(headers['content-length'] ?? '0') === 0
  const auth = await authenticate(exchange, caches, bodiless ? EMPTY_SHA256_HEX : undefined)
  if (!auth.ok && MALFORMED_SIGNATURE.has(auth.code)) {
    return fail('invalid_data', `The request's AWS Signature Version 4: ${auth.detail}`)
  }
  // A code the admin API answers itself (iam busy or restarting) stays; S3's refusals of the
  // credentials are the admin API's 401.
  if (!auth.ok) return isAdminSurfaceCode(auth.code) ? auth : fail('unauthorized', auth.detail)
  c.set('userId', auth.value.principal.userId)
  if (auth.value.principal.role !== 'SuperUser') return fail('forbidden', 'not a SuperUser')
  return ok(null)
}

function countByStatus(members: readonly Member[]): Record<string, number> {
  const counts: Record<Lowercase<MemberStatus>, number> = { alive: 0, suspect: 0, dead: 0, left: 0 }
  for (const member of members) counts[member.status.toLowerCase() as Lowercase<MemberStatus>]++
  return counts
}

function tuning(mesh: Mesh, name: string, fallback: number): number {
  const value = Number(mesh.config[name])
  return Number.isFinite(value) && value > 0 ? value : fallback
}

export function topologyJson(mesh: Mesh, view: MembershipView): object {
  const nodes = view.members.filter((member) => member.kind === 'node')
  const pools = [...new Set(nodes.map((member) => member.pool ?? ''))].sort()
  return {
    cluster: mesh.config['SVC_CLUSTER_NAME'],
    pools: pools.map((name) => ({
      name,
      replication_factor: tuning(mesh, 'SVC_REPLICATION_FACTOR', 3),
      write_quorum: tuning(mesh, 'SVC_WRITE_QUORUM', 2),
      read_quorum: tuning(mesh, 'SVC_READ_QUORUM', 2),
      nodes: nodes
        .filter((member) => (member.pool ?? '') === name)
        .map((member) => ({
          id: member.id,
          status: member.status,
          phase: member.phase,
          http_addr: member.httpAddr,
          grpc_addr: member.grpcAddr,
          free_bytes: member.freeBytes,
          incarnation: member.incarnation,
          version: member.version,
        })),
    })),
    gateways: view.members
      .filter((member) => member.kind === 'gateway')
      .map((member) => ({
        id: member.id,
        status: member.status,
        http_addr: member.httpAddr,
        version: member.version,
      })),
  }
}

/** healthy: every storage node Alive and clocks close; critical: a pool has fewer Alive nodes
 * than a write needs; degraded otherwise. */
export function clusterHealthJson(mesh: Mesh, view: MembershipView, hintsPending: number): object {
  const nodes = view.members.filter((member) => member.kind === 'node')
  const writeQuorum = tuning(mesh, 'SVC_WRITE_QUORUM', 2)
  const pools = [...new Set(nodes.map((member) => member.pool ?? ''))]
  const critical = pools.some(
    (pool) =>
      nodes.filter((member) => (member.pool ?? '') === pool && member.status === 'Alive').length <
      writeQuorum,
  )
  const allAlive = nodes.every((member) => member.status === 'Alive')
  const skewed = view.maxClockSkewMs > CLOCK_SKEW_WARN_MS
  const status = critical ? 'critical' : allAlive && !skewed ? 'healthy' : 'degraded'
  return {
    status,
    nodes: countByStatus(nodes),
    gateways: countByStatus(view.members.filter((member) => member.kind === 'gateway')),
    hints_pending: hintsPending,
    max_clock_skew_ms: Math.round(view.maxClockSkewMs),
    clock_skew_warning: skewed,
  }
}

/** Hints this node keeps for replicas that missed writes (0 on a gateway, which keeps none). */
export async function hintsPending(mesh: Mesh): Promise<number> {
  const counted = await mesh.call('coordinator', {
    kind: 'hint.count',
    requestId: 'hints',
    deadlineMs: mesh.now() + 1_000,
  })
  return counted.ok ? counted.value : 0
}

/** What this node's repair workers did (CLUSTER-INTERFACE.md): its anti-entropy rounds, the hints
 * it keeps and delivered, its scrubber's pass, and its lifecycle passes. A worker that does not
 * answer (a gateway runs none) is left out. */
async function repairStatusJson(mesh: Mesh): Promise<Record<string, unknown>> {
  const deadlineMs = mesh.now() + 1_000
  const [entropy, pending, hints, scrubber, bootstrap, lifecycle] = await Promise.all([
    mesh.call('anti-entropy', {
      kind: 'anti-entropy.status',
      requestId: 'repair-status',
      deadlineMs,
    }),
    hintsPending(mesh),
    mesh.call('hint-queue', {
      kind: 'hint-queue.counters',
      requestId: 'repair-status',
      deadlineMs,
    }),
    mesh.call('scrubber', {
      kind: 'scrubber.status',
      requestId: 'repair-status',
      deadlineMs,
    }),
    mesh.call('coordinator', {
      kind: 'node.bootstrap-status',
      requestId: 'repair-status',
      deadlineMs,
    }),
    mesh.call('lifecycle', { kind: 'lifecycle.status', requestId: 'repair-status', deadlineMs }),
  ])
  return {
    ...(entropy.ok ? { anti_entropy: antiEntropyJson(entropy.value) } : {}),
    ...(entropy.ok ? { tombstones: { purged: entropy.value.tombstonesPurged } } : {}),
    ...(hints.ok
      ? {
          hints: {
            pending,
            delivered: hints.value.delivered,
            expired: hints.value.expired,
            // Every hint's change merges now: none is left undeliverable. Kept for readers.
            unsupported: 0,
          },
        }
      : {}),
    ...(scrubber.ok ? { scrubber: scrubber.value } : {}),
    ...(bootstrap.ok ? { bootstrap: bootstrapJson(bootstrap.value) } : {}),
    ...(lifecycle.ok ? { lifecycle: lifecycle.value } : {}),
  }
}

function bootstrapJson(job: BootstrapJob): Record<string, unknown> {
  const at = (ms: number | undefined): string | null =>
    ms === undefined ? null : new Date(ms).toISOString()
  return {
    state: job.state,
    ...(job.id === '' ? {} : { job_id: job.id }),
    started_at: at(job.startedMs),
    finished_at: at(job.finishedMs),
    ...(job.keysSynced === undefined ? {} : { keys_synced: job.keysSynced }),
    ...(job.error === undefined ? {} : { error: job.error }),
  }
}

/** The confirmation a bootstrap needs: it wipes this node's object data. */
const BOOTSTRAP_CONFIRM = 'wipe-and-resync'

function antiEntropyJson(status: AntiEntropyStatus): Record<string, unknown> {
  const at = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString())
  return {
    last_round_at: at(status.lastRoundAtMs),
    rounds: status.rounds,
    items_repaired: status.itemsRepaired,
    // Every difference merges now: none is left unsettled. Kept for readers.
    unsupported: 0,
    throttle: {
      items_per_second: status.throttle.itemsPerSecond,
      bytes_per_second: status.throttle.bytesPerSecond,
    },
    peers: status.peers.map((peer) => ({
      node: peer.node,
      last_full_sync: at(peer.lastFullSyncMs),
      diverged: peer.diverged,
      roots_digest: peer.rootsDigest,
      ...(peer.error === undefined ? {} : { error: peer.error }),
    })),
  }
}

export function createClusterApp(mesh: Mesh, caches: AuthCaches): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>()
  app.use('*', exchangeMiddleware(mesh))
  const guarded = (operation: string, handle: (c: AdminContext) => Promise<Response>) => {
    return async (c: AdminContext): Promise<Response> => {
      c.set('operation', operation)
      c.set('route', c.req.routePath)
      const allowed = await superUser(c, mesh, caches)
      if (!allowed.ok) return sendFailure(c, allowed)
      return handle(c)
    }
  }
  const withView = (build: (view: MembershipView) => object | Promise<object>) => {
    return async (c: AdminContext): Promise<Response> => {
      const view = await membershipView(mesh, mesh.now() + 2_000)
      if (!view.ok) return sendFailure(c, view)
      return sendJson(c, 200, await build(view.value))
    }
  }
  app.get(
    '/cluster/topology',
    guarded(
      'ClusterTopology',
      withView((view) => topologyJson(mesh, view)),
    ),
  )
  app.get(
    '/cluster/health',
    guarded(
      'ClusterHealth',
      withView(async (view) => clusterHealthJson(mesh, view, await hintsPending(mesh))),
    ),
  )
  app.get(
    '/cluster/repair-status',
    guarded('RepairStatus', async (c) => sendJson(c, 200, await repairStatusJson(mesh))),
  )
  app.get(
    '/node/health',
    guarded(
      'NodeHealth',
      withView(async (view) => {
        // One gathering: each actor's health with its figures, the links and the HTTP totals.
        const figures = await mesh.nodeFigures()
        return {
          id: view.self.id,
          mode: mesh.config['SVC_MODE'],
          status: view.self.status,
          phase: view.self.phase,
          pool: view.self.pool,
          incarnation: view.self.incarnation,
          uptime_seconds: Math.round(process.uptime()),
          actors: figures.actors,
          links: figures.links,
          http: figures.http,
        }
      }),
    ),
  )
  app.post(
    '/node/bootstrap',
    guarded('NodeBootstrap', async (c) => {
      const body = await readJsonObject(c.env.incoming)
      if (!body.ok) return sendFailure(c, body)
      if (body.value['confirm'] !== BOOTSTRAP_CONFIRM) {
        return sendCode(c, 'invalid_data', `confirm must be "${BOOTSTRAP_CONFIRM}"`)
      }
      const job = await mesh.call('coordinator', {
        kind: 'node.bootstrap',
        requestId: c.get('requestId'),
        deadlineMs: mesh.now() + 10_000,
      })
      if (!job.ok) return sendFailure(c, job)
      return sendJson(c, 202, { job_id: job.value.id, state: job.value.state })
    }),
  )
  if (mesh.config['SVC_CHAOS'] === '1') {
    app.post(
      '/chaos/partition',
      guarded('ChaosPartition', async (c) => {
        const body = await readJsonObject(c.env.incoming)
        if (!body.ok) return sendFailure(c, body)
        const peers = body.value['peers']
        const valid =
          Array.isArray(peers) &&
          peers.length <= PARTITION_PEERS_MAX &&
          peers.every((peer) => typeof peer === 'string' && peer !== '')
        if (!valid) {
          return sendCode(c, 'invalid_data', `peers must be a list of node ids (at most 64)`)
        }
        await mesh.partition(peers as string[])
        return sendJson(c, 200, { partitioned: peers })
      }),
    )
    app.delete(
      '/chaos/partition',
      guarded('ChaosHeal', async (c) => {
        await mesh.partition([])
        return sendJson(c, 200, { partitioned: [] })
      }),
    )
  }
  app.all('*', (c) => sendAdminError(c, ROUTE_NOT_FOUND))
  return app
}
