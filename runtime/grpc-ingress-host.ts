/** @module The grpc-ingress actor: the node's door for calls from other nodes. `init` opens the
 * gRPC server (cluster/grpc-server.ts) on SVC_NODE_GRPC_ADDR, which authenticates each call, drops
 * those of partitioned peers and bounds how many run at once; an authenticated call becomes a
 * `peer.request` to the local actor that serves its service (Membership.* the gossiper, Catalog.*
 * and Replica.* replica-store, Iam.* iam), whose Result is the answer; a call that carries a body
 * hands the actor its local stream in `stream`. It handles no messages of its own. `stop` lets the
 * calls in progress finish for up to GRPC_SHUTDOWN_GRACE_MS, then cuts them. On a storage node it
 * also tells gossip the data volume's free space, every SPACE_REPORT_MS. */
import assert from 'node:assert/strict'
import type { Actor, ActorName, Context } from '../protocol/actor.js'
import type { PeerMethod, PeerRequestMsg } from '../protocol/cluster.js'
import { unreachable } from '../protocol/errors.js'
import { clusterKey } from './cluster/cluster-key.js'
import { startGrpcServer, type GrpcServer } from './cluster/grpc-server.js'
import { logGrpcTo } from './cluster/grpc-service.js'
import { readGrpcTls } from './cluster/grpc-tls.js'
import { readVolumeStatus } from './data-volume.js'
import type { HostContext } from './thread-host.js'

/** How long a stop waits for calls in progress (CLUSTER.md section 9). */
export const GRPC_SHUTDOWN_GRACE_MS = 10_000

export interface GrpcIngressState {
  server: GrpcServer
  /** Cancels the next report of the data volume's free space to gossip. */
  stopSpaceReports: () => void
}

/** How often gossip hears this node's free space. */
const SPACE_REPORT_MS = 10_000
const MIB = 1024 * 1024

/** Which actor of this node serves each service of cluster.proto. */
export function servingActor(method: PeerMethod): 'gossiper' | 'replica-store' | 'iam' {
  const service = method.slice(0, method.indexOf('.'))
  switch (service) {
    case 'Membership':
      return 'gossiper'
    case 'Catalog':
    case 'Replica':
      return 'replica-store'
    case 'Iam':
      return 'iam'
  }
  throw new Error(`no actor serves ${method}`)
}

export const grpcIngress: Actor<GrpcIngressState, 'grpc-ingress'> = {
  name: 'grpc-ingress',
  async init(ctx) {
    const host = ctx as HostContext
    const address = ctx.config['SVC_NODE_GRPC_ADDR']
    const clusterName = ctx.config['SVC_CLUSTER_NAME']
    const nodeId = ctx.config['SVC_NODE_ID']
    assert(address !== undefined && clusterName !== undefined && nodeId !== undefined)
    logGrpcTo(ctx.log)
    // A derived key is warned of once, at the node's start (runtime/cluster-config.ts).
    const { key } = clusterKey(ctx.config)
    const tls = readGrpcTls(ctx.config)
    const server = await startGrpcServer({
      address,
      tls,
      clusterName,
      nodeId,
      key,
      isPartitioned: (from) => host.isPartitioned(from),
      log: ctx.log,
      dispatch: (method, from, body, deadlineMs, stream) => {
        const requestId = `peer-${Buffer.from(ctx.randomBytes(8)).toString('hex')}`
        const msg: PeerRequestMsg = {
          kind: 'peer.request',
          requestId,
          deadlineMs,
          method,
          from,
          body,
          ...(stream === undefined ? {} : { stream }),
        }
        return ctx.call(servingActor(method), msg)
      },
    })
    ctx.log.info({ address, port: server.port, tls: tls !== null }, 'gRPC listening')
    const state: GrpcIngressState = { server, stopSpaceReports: () => undefined }
    if (ctx.config['SVC_MODE'] === 'cluster') reportFreeSpace(state, ctx)
    return state
  },
  handlers: {},
  async stop(state) {
    state.stopSpaceReports()
    await state.server.shutdown(GRPC_SHUTDOWN_GRACE_MS)
  },
}

/** Gossip tells the others how much room this node has (new buckets go to the pool with the most):
 * the data volume's free bytes, looked at every SPACE_REPORT_MS, in whole MiB so that a write does
 * not make a change to announce. A look that fails is skipped. */
function reportFreeSpace(state: GrpcIngressState, ctx: Context): void {
  const dataDir = ctx.config['SVC_DATA_DIR'] ?? './data'
  const report = async (): Promise<void> => {
    const status = await readVolumeStatus(dataDir).catch(() => null)
    if (status !== null) {
      const freeBytes = Math.floor(status.freeBytes / MIB) * MIB
      const deadlineMs = ctx.now() + SPACE_REPORT_MS
      const msg = {
        kind: 'membership.update-self' as const,
        freeBytes,
        requestId: 'space',
        deadlineMs,
      }
      await ctx.call('gossiper', msg)
    }
    state.stopSpaceReports = ctx.after(SPACE_REPORT_MS, () => void report())
  }
  void report()
}
