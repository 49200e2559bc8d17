/** @module What the bench measures on the cluster target: the bench bucket created through node 1
 * (the catalog puts it on every node), an unrecorded warm-up through every node, then the load
 * phases of PHASE_KINDS twice, with the single server's concurrency, bounds and client: all
 * through node 1, then round-robin over the 3 nodes (one wrk per node), the server's CPU being
 * every node's either way. Around each PUT phase it reads every node's /metrics and keeps the
 * node-to-node bytes sent per PUT acknowledged. Today a node keeps the
 * objects it receives, so a key is read back through the node it was written through; once
 * writes replicate, the same phases measure the replicated path. */
import { request } from 'undici'
import { PEER_BYTES_SENT } from '../runtime/cluster/peer-bytes.js'
import { BUCKET } from './config.js'
import { flushDirtyPages } from './disk.js'
import { createBucket, runLoadPhases, warmUp, type LoadResults } from './suite.js'
import type { Endpoint, Target } from './targets.js'

const METRICS_TIMEOUT_MS = 5_000

export type ClusterRoute = 'n1' | 'round-robin'
export const CLUSTER_ROUTES: readonly ClusterRoute[] = ['n1', 'round-robin']

export type ClusterResults = Map<ClusterRoute, LoadResults>

export async function runClusterSuite(target: Target): Promise<ClusterResults> {
  await flushDirtyPages(target.name)
  await createBucket(target, BUCKET)
  const warmUpOpsPerSecond = await warmUp(target)
  const nodePids = (): number[][] => target.nodes.map((node) => node.pids())
  const sentBytes = (): Promise<number | null> => peerBytesSent(target.nodes)
  const results: ClusterResults = new Map()
  for (const route of CLUSTER_ROUTES) {
    const nodes = route === 'n1' ? target.nodes.slice(0, 1) : target.nodes
    const name = `${target.name} ${route === 'n1' ? 'via n1' : 'round-robin'}`
    const keyPrefix = `${route}-`
    results.set(
      route,
      await runLoadPhases({ name, nodes, nodePids, keyPrefix, warmUpOpsPerSecond, sentBytes }),
    )
  }
  return results
}

/** The bytes all nodes have sent each other so far, summed over methods; null if a node's
 * /metrics did not answer. */
async function peerBytesSent(nodes: readonly Endpoint[]): Promise<number | null> {
  const counts = await Promise.all(nodes.map((node) => nodeBytesSent(node.origin)))
  let total = 0
  for (const count of counts) {
    if (count === null) return null
    total += count
  }
  return total
}

async function nodeBytesSent(origin: string): Promise<number | null> {
  try {
    const response = await request(`${origin}/metrics`, {
      headersTimeout: METRICS_TIMEOUT_MS,
      bodyTimeout: METRICS_TIMEOUT_MS,
    })
    const text = await response.body.text()
    return response.statusCode === 200 ? sumSeries(text, PEER_BYTES_SENT) : null
  } catch {
    return null
  }
}

/** The sum of every series of `name` in a Prometheus text exposition (0 when it has none). */
export function sumSeries(text: string, name: string): number {
  let sum = 0
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue
    sum += Number(line.slice(line.lastIndexOf(' ') + 1))
  }
  return sum
}
