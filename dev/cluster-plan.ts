/** @module The layout of `npm run cluster`, a local development cluster: 3 storage nodes and a
 * gateway on loopback ports counted from one base port, each node's data under the data root, and
 * the environment of each member (the recipe of CLUSTER-INTERFACE.md). Pure: reads the variables it
 * is given, touches nothing. Keys, root password and cluster secret come from the environment or
 * are fixed development values, which is safe only because every port is on 127.0.0.1. */
import { join, resolve } from 'node:path'

/** HTTP ports count up from the base (gateway first), gRPC ports from the base plus this. */
export const GRPC_PORT_OFFSET = 100
/** Beside the single node's 9000 (HTTP) and 9100 (gRPC), not on them. */
export const DEFAULT_BASE_PORT = 9010
export const NODE_COUNT = 3
const HOST = '127.0.0.1'
const PORT_MAX = 65_535

/** What a member of the cluster reads, and what the script prints for a client to use. */
export const DEV_DEFAULTS = {
  SVC_CLUSTER_NAME: 'local',
  SVC_CLUSTER_SECRET: 'local-development-cluster-secret-not-for-production',
  SVC_ACCESS_KEY_ID: 'devaccesskey',
  SVC_SECRET_ACCESS_KEY: 'devsecretkey-of-the-local-cluster',
  SVC_ROOT_USERNAME: 'root',
  SVC_ROOT_PASSWORD: 'root-password-of-the-local-cluster',
} as const

export type SharedName = keyof typeof DEV_DEFAULTS

export interface LocalMember {
  id: string
  role: 'node' | 'gateway'
  httpUrl: string
  /** Where the member keeps its data; null for the gateway, which stores nothing. */
  dataDir: string | null
  /** The SVC_* variables of this member, over the environment the script was started with. */
  env: Record<string, string>
}

export interface ClusterPlan {
  members: LocalMember[]
  /** The shared settings in force, and which of them are development defaults. */
  shared: Record<SharedName, string>
  defaulted: SharedName[]
}

/** The plan for an environment: CLUSTER_BASE_PORT and CLUSTER_DATA_ROOT (relative to `cwd`,
 * `./data-cluster` by default) place it; SVC_* shared settings pass through. Throws with the
 * variable's name when a value cannot be used. */
export function clusterPlan(env: NodeJS.ProcessEnv, cwd: string): ClusterPlan {
  const base = basePort(env['CLUSTER_BASE_PORT'])
  const dataRoot = resolve(cwd, env['CLUSTER_DATA_ROOT'] || 'data-cluster')
  const defaulted: SharedName[] = []
  const shared = { ...DEV_DEFAULTS } as Record<SharedName, string>
  for (const name of Object.keys(DEV_DEFAULTS) as SharedName[]) {
    const value = env[name]
    if (value === undefined || value === '') defaulted.push(name)
    else shared[name] = value
  }
  const address = (offset: number): { http: string; grpc: string } => ({
    http: `${HOST}:${base + offset}`,
    grpc: `${HOST}:${base + GRPC_PORT_OFFSET + offset}`,
  })
  const nodeIds = Array.from({ length: NODE_COUNT }, (_, at) => `n${at + 1}`)
  const poolNodes = nodeIds.map((id, at) => `${id}:${address(at + 1).grpc}`).join(',')
  const seeds = nodeIds.map((_, at) => address(at + 1).grpc).join(',')
  const member = (id: string, offset: number, role: LocalMember['role']): LocalMember => {
    const { http, grpc } = address(offset)
    const dataDir = role === 'node' ? join(dataRoot, id) : null
    const own: Record<string, string> = {
      ...shared,
      SVC_MODE: role === 'node' ? 'cluster' : 'gateway',
      SVC_NODE_ID: id,
      SVC_NODE_HTTP_ADDR: http,
      SVC_NODE_GRPC_ADDR: grpc,
      SVC_SEEDS: seeds,
    }
    if (dataDir !== null) {
      Object.assign(own, { SVC_POOL_NAME: 'p1', SVC_POOL_NODES: poolNodes, SVC_DATA_DIR: dataDir })
    }
    return { id, role, httpUrl: `http://${http}`, dataDir, env: own }
  }
  const members = [
    ...nodeIds.map((id, at) => member(id, at + 1, 'node')),
    member('g1', 0, 'gateway'),
  ]
  return { members, shared, defaulted }
}

function basePort(value: string | undefined): number {
  if (value === undefined || value === '') return DEFAULT_BASE_PORT
  const port = Number(value)
  const highest = PORT_MAX - GRPC_PORT_OFFSET - NODE_COUNT
  if (!Number.isInteger(port) || port < 1 || port > highest) {
    throw new Error(`CLUSTER_BASE_PORT must be an integer from 1 to ${highest}, got ${value}`)
  }
  return port
}

/** The lines printed once every member is healthy: where to send S3 and admin requests, and with
 * which keys. */
export function endpointLines(plan: ClusterPlan, pids: ReadonlyMap<string, number>): string[] {
  const { shared } = plan
  const lines = ['local cluster ready (S3 API and admin API on each address):']
  for (const member of plan.members) {
    const role = member.role === 'node' ? 'storage node' : 'gateway'
    const data = member.dataDir === null ? '' : `  data ${member.dataDir}`
    lines.push(`  ${member.id}  ${member.httpUrl}  ${role}, pid ${pids.get(member.id)}${data}`)
  }
  lines.push(
    `  access key ${shared.SVC_ACCESS_KEY_ID}  secret key ${shared.SVC_SECRET_ACCESS_KEY}`,
    `  root user ${shared.SVC_ROOT_USERNAME}  password ${shared.SVC_ROOT_PASSWORD}`,
  )
  if (plan.defaulted.length > 0) {
    lines.push(`  development defaults (set to choose): ${plan.defaulted.join(' ')}`)
  }
  lines.push('Ctrl+C stops every member.')
  return lines
}
