/** @module The grpc-ingress actor: the node's door for calls from other nodes. `init` opens the
 * gRPC server (cluster/grpc-server.ts) on SVC_NODE_GRPC_ADDR, which authenticates each call, drops
 * those of partitioned peers and bounds how many run at once; an authenticated call becomes a
 * `peer.request` to the local actor that serves its service (Membership.* the gossiper, Catalog.*
 * replica-store), whose Result is the answer. It handles no messages of its own. `stop` lets the
 * calls in progress finish for up to GRPC_SHUTDOWN_GRACE_MS, then cuts them. When the cluster key
 * is derived from the S3 secret, it says so once at start: this is the one thread of a node that
 * serves node-to-node calls. */
import assert from 'node:assert/strict'
import type { Actor, ActorName } from '../protocol/actor.js'
import type { PeerMethod, PeerRequestMsg } from '../protocol/cluster.js'
import { unreachable } from '../protocol/errors.js'
import { clusterKey } from './cluster/cluster-key.js'
import { startGrpcServer, type GrpcServer } from './cluster/grpc-server.js'
import { logGrpcTo } from './cluster/grpc-service.js'
import { readGrpcTls } from './cluster/grpc-tls.js'
import type { HostContext } from './thread-host.js'

/** How long a stop waits for calls in progress (CLUSTER.md section 9). */
export const GRPC_SHUTDOWN_GRACE_MS = 10_000

export interface GrpcIngressState {
  server: GrpcServer
}

/** Which actor of this node serves each service of cluster.proto. */
export function servingActor(method: PeerMethod): ActorName {
  const service = method.slice(0, method.indexOf('.'))
  switch (service) {
    case 'Membership':
      return 'gossiper'
    case 'Catalog':
      return 'replica-store'
  }
  throw new Error(`no actor serves ${method}`)
}

export const grpcIngress: Actor<GrpcIngressState, never> = {
  name: 'grpc-ingress',
  async init(ctx) {
    const host = ctx as HostContext
    const address = ctx.config['SVC_NODE_GRPC_ADDR']
    const clusterName = ctx.config['SVC_CLUSTER_NAME']
    const nodeId = ctx.config['SVC_NODE_ID']
    assert(address !== undefined && clusterName !== undefined && nodeId !== undefined)
    logGrpcTo(ctx.log)
    const { key, derived } = clusterKey(ctx.config)
    if (derived) {
      ctx.log.warn(
        {},
        'the cluster key is derived from SVC_SECRET_ACCESS_KEY: set SVC_CLUSTER_SECRET, a secret' +
          ' of its own, on every node',
      )
    }
    const tls = readGrpcTls(ctx.config)
    const server = await startGrpcServer({
      address,
      tls,
      clusterName,
      nodeId,
      key,
      isPartitioned: (from) => host.isPartitioned(from),
      dispatch: (method, from, body, deadlineMs) => {
        const requestId = `peer-${Buffer.from(ctx.randomBytes(8)).toString('hex')}`
        const msg: PeerRequestMsg = {
          kind: 'peer.request',
          requestId,
          deadlineMs,
          method,
          from,
          body,
        }
        return ctx.call(servingActor(method), msg)
      },
    })
    ctx.log.info({ address, port: server.port, tls: tls !== null }, 'gRPC listening')
    return { server }
  },
  handle(_state, msg) {
    return unreachable(msg)
  },
  async stop(state) {
    await state.server.shutdown(GRPC_SHUTDOWN_GRACE_MS)
  },
}
