/** @module Starts a real cluster for integration tests: storage nodes (and gateways) as child
 * processes on 127.0.0.1, each with its own HTTP and gRPC ports and data directory, sharing a
 * cluster name, secret and S3 keys; one pool of every node. A node keeps its ports and its data
 * directory across `restart`, as an operator's would. Every child is stopped by its PID. */
import { CreateBucketCommand, PutBucketVersioningCommand, type S3Client } from '@aws-sdk/client-s3'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, startServer, type TestServer } from './server.js'

export const ROOT_USERNAME = 'root'
export const ROOT_PASSWORD = 'root-password-of-the-test-cluster'
const MEMBER_HEALTH_WAIT_MS = 90_000

export interface ClusterNode {
  id: string
  grpcPort: number
  httpPort: number
  dataDir: string
  /** The running process, or null while stopped. */
  server: TestServer | null
}

export interface TestCluster {
  name: string
  /** SVC_CLUSTER_SECRET of every member. */
  secret: string
  nodes: ClusterNode[]
  gateways: ClusterNode[]
  /** The running server of a node or gateway (throws when it is stopped). */
  server(id: string): TestServer
  /** Starts a stopped node again, on its ports and data directory. */
  restart(id: string, waitHealthy?: boolean): Promise<TestServer>
  /** Stops everything (SIGKILL) and removes the data directories. */
  destroy(): Promise<void>
}

export interface ClusterOptions {
  nodes?: number
  gateways?: number
  /** Extra environment for every member (tuning variables, chaos). */
  env?: Record<string, string>
  /** Extra environment for one member, by id (n1, n2..., g1...). */
  envOf?: Record<string, Record<string, string>>
}

export async function startCluster(options: ClusterOptions = {}): Promise<TestCluster> {
  const name = `test-${randomBytes(4).toString('hex')}`
  const secret = randomBytes(24).toString('hex')
  const member = async (id: string): Promise<ClusterNode> => ({
    id,
    grpcPort: await freePort(),
    httpPort: await freePort(),
    dataDir: mkdtempSync(join(tmpdir(), `svc-${id}-`)),
    server: null,
  })
  const nodes: ClusterNode[] = []
  for (let n = 1; n <= (options.nodes ?? 3); n++) nodes.push(await member(`n${n}`))
  const gateways: ClusterNode[] = []
  for (let n = 1; n <= (options.gateways ?? 0); n++) gateways.push(await member(`g${n}`))
  const grpc = (node: ClusterNode): string => `127.0.0.1:${node.grpcPort}`
  const poolNodes = nodes.map((node) => `${node.id}:127.0.0.1:${node.grpcPort}`).join(',')
  const seeds = nodes.map(grpc).join(',')
  const envOf = (node: ClusterNode, gateway: boolean): Record<string, string> => ({
    SVC_MODE: gateway ? 'gateway' : 'cluster',
    SVC_CLUSTER_NAME: name,
    SVC_CLUSTER_SECRET: secret,
    SVC_NODE_ID: node.id,
    SVC_NODE_GRPC_ADDR: grpc(node),
    SVC_SEEDS: seeds,
    ...(gateway ? {} : { SVC_POOL_NAME: 'p1', SVC_POOL_NODES: poolNodes }),
    SVC_ROOT_USERNAME: ROOT_USERNAME,
    SVC_ROOT_PASSWORD: ROOT_PASSWORD,
    ...options.env,
    ...options.envOf?.[node.id],
  })
  const all = [...nodes, ...gateways]
  const launch = async (node: ClusterNode, waitHealthy = true): Promise<TestServer> => {
    const gateway = gateways.includes(node)
    node.server = await startServer({
      env: envOf(node, gateway),
      dataDir: node.dataDir,
      port: node.httpPort,
      waitHealthy,
      // Several nodes start at once on few cores, and each serves after its first catalog pull.
      healthWaitMs: MEMBER_HEALTH_WAIT_MS,
    })
    return node.server
  }
  const cluster: TestCluster = {
    name,
    secret,
    nodes,
    gateways,
    server(id) {
      const server = all.find((node) => node.id === id)?.server
      if (server === null || server === undefined) throw new Error(`${id} is not running`)
      return server
    },
    restart(id, waitHealthy = true) {
      const node = all.find((candidate) => candidate.id === id)
      if (node === undefined) throw new Error(`no member ${id}`)
      return launch(node, waitHealthy)
    },
    async destroy() {
      await Promise.all(all.map((node) => node.server?.kill() ?? Promise.resolve()))
      for (const node of all) rmSync(node.dataDir, { recursive: true, force: true })
    },
  }
  try {
    // Together: each node's first catalog pull waits for the others to be alive.
    await Promise.all(nodes.map((node) => launch(node)))
    await Promise.all(gateways.map((node) => launch(node)))
  } catch (error) {
    await cluster.destroy()
    throw error
  }
  return cluster
}

/** The two buckets the cluster suites write to: `plain`, and `versioned` with versioning
 * Enabled. */
export async function createPlainAndVersioned(s3: S3Client): Promise<void> {
  await s3.send(new CreateBucketCommand({ Bucket: 'plain' }))
  await s3.send(new CreateBucketCommand({ Bucket: 'versioned' }))
  await s3.send(
    new PutBucketVersioningCommand({
      Bucket: 'versioned',
      VersioningConfiguration: { Status: 'Enabled' },
    }),
  )
}
