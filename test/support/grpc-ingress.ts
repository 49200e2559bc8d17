/** @module The grpc-ingress actor for transport tests: its real gRPC server on a loopback port,
 * on a fake context whose calls to local actors a test answers and records. */
import type { PeerRequestMsg } from '../../protocol/cluster.js'
import type { Result } from '../../protocol/errors.js'
import { grpcIngress } from '../../runtime/grpc-ingress-host.js'
import type { HostContext } from '../../runtime/thread-host.js'
import { fakeContext } from './fake-context.js'

export interface IngressUnderTest {
  port: number
  /** Each peer.request the ingress handed to a local actor, and to which. */
  reached: { to: string; msg: PeerRequestMsg }[]
  stop(): Promise<void>
}

/** Starts grpc-ingress as node `nodeId` of `clusterName` with that secret; `answer` is what the
 * local actors answer to every call it hands them. */
export async function startIngress(options: {
  clusterName: string
  nodeId: string
  secret: string
  mode: 'cluster' | 'gateway'
  answer: Result<unknown>
}): Promise<IngressUnderTest> {
  const ctx = fakeContext({
    self: 'grpc-ingress',
    config: {
      SVC_MODE: options.mode,
      SVC_CLUSTER_NAME: options.clusterName,
      SVC_NODE_ID: options.nodeId,
      SVC_NODE_GRPC_ADDR: '127.0.0.1:0',
      SVC_CLUSTER_SECRET: options.secret,
    },
  })
  const reached: IngressUnderTest['reached'] = []
  ctx.onCall((to, msg) => {
    reached.push({ to, msg: msg as PeerRequestMsg })
    return options.answer
  })
  const host = Object.assign(Object.create(ctx) as HostContext, { isPartitioned: () => false })
  const state = await grpcIngress.init(host)
  return {
    port: state.server.port,
    reached,
    stop: async () => {
      await grpcIngress.stop?.(state, host)
    },
  }
}
