/** @module The grpc-ingress actor for transport tests: its real gRPC server on a loopback port,
 * on a fake context whose calls to local actors a test answers and records. Its data directory
 * (whose free space it reports to the gossiper) is a temporary one, never the working directory's
 * `./data`. */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { PeerRequestMsg } from '../../protocol/cluster.js'
import { ok, type Result } from '../../protocol/errors.js'
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
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-grpc-ingress-'))
  const ctx = fakeContext({
    self: 'grpc-ingress',
    config: {
      SVC_MODE: options.mode,
      SVC_CLUSTER_NAME: options.clusterName,
      SVC_NODE_ID: options.nodeId,
      SVC_NODE_GRPC_ADDR: '127.0.0.1:0',
      SVC_CLUSTER_SECRET: options.secret,
      SVC_DATA_DIR: dataDir,
    },
  })
  const reached: IngressUnderTest['reached'] = []
  ctx.onCall((to, msg) => {
    // The free-space reports to the gossiper are the ingress's own, not calls it handed over.
    if ((msg as { kind?: string }).kind !== 'peer.request') return ok(null)
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
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}
