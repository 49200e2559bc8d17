/** @module The cluster target: the 3 storage nodes of dev/cluster-plan.ts's layout (without its
 * gateway: the load generator spreads requests itself), each a child process of the service on
 * 127.0.0.1 with its data in one temp dir, its output in a log file there. The plan counts ports
 * from a base; we take one whose node ports are all free now. The target is up once every node
 * answers /health 200 and sees the 3 nodes Alive on /admin/cluster/health. Stopping stops every
 * node by its PID (processes.ts) and removes the temp dir. */
import type { ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { request } from 'undici'
import { clusterPlan, DEV_DEFAULTS, GRPC_PORT_OFFSET, NODE_COUNT } from '../dev/cluster-plan.js'
import { CLUSTER_HEALTH_WAIT_MS } from './config.js'
import { presigner } from './presign.js'
import { freePort, logTail, SERVICE_MAIN, sleep, spawnLogged } from './processes.js'
import { stopProcess, waitUp } from './processes.js'
import { processTree } from './rss.js'
import type { Endpoint, Started, Target } from './targets.js'

const CREDENTIALS = {
  accessKeyId: DEV_DEFAULTS.SVC_ACCESS_KEY_ID,
  secretAccessKey: DEV_DEFAULTS.SVC_SECRET_ACCESS_KEY,
}
/** Bases tried before giving up: each is a port the kernel just handed out. */
const BASE_ATTEMPTS = 20
const ALIVE_POLL_MS = 250

export async function startCluster(): Promise<Started> {
  if (!existsSync(SERVICE_MAIN)) return { ok: false, reason: `${SERVICE_MAIN} does not exist` }
  const base = await freeBase()
  if (base === null) return { ok: false, reason: `no free ports for ${NODE_COUNT} nodes` }
  const dir = mkdtempSync(join(tmpdir(), 'bench-cluster-'))
  const env = { CLUSTER_BASE_PORT: String(base), CLUSTER_DATA_ROOT: join(dir, 'data') }
  const members = clusterPlan(env, dir).members.filter((member) => member.role === 'node')
  const logs = members.map((member) => `${member.id}.log`)
  const servers: ChildProcess[] = []
  const stop = async (): Promise<void> => {
    await Promise.all(servers.map((server) => stopProcess(server)))
    rmSync(dir, { recursive: true, force: true })
  }
  for (const [at, member] of members.entries()) {
    if (member.dataDir !== null) mkdirSync(member.dataDir, { recursive: true, mode: 0o700 })
    const memberEnv = { ...process.env, ...member.env }
    const log = join(dir, logs[at] ?? 'node.log')
    servers.push(spawnLogged(process.execPath, [SERVICE_MAIN], memberEnv, log))
  }
  const nodes: Endpoint[] = members.map((member, at) => ({
    origin: member.httpUrl,
    presign: presigner(Number(new URL(member.httpUrl).port), CREDENTIALS),
    pids: () => {
      const pid = servers[at]?.pid
      return pid === undefined ? [] : processTree(pid)
    },
  }))
  // Together: each node serves only after its first catalog pull, which needs the others.
  const healthy = await Promise.all(
    servers.map((server, at) => {
      const url = `${members[at]?.httpUrl}/health`
      return waitUp(server, url, (status) => status === 200, CLUSTER_HEALTH_WAIT_MS)
    }),
  )
  let failure = healthy.find((outcome) => outcome !== null) ?? null
  if (failure === null) failure = await allAlive(nodes, Date.now() + CLUSTER_HEALTH_WAIT_MS)
  if (failure !== null) {
    const log = logTail(dir, logs)
    await stop()
    return log === '' ? { ok: false, reason: failure } : { ok: false, reason: failure, log }
  }
  const pids = (): number[] => nodes.flatMap((node) => node.pids())
  const [first] = nodes
  if (first === undefined) throw new Error('the plan has no node')
  const target: Target = { name: 'cluster', ...first, nodes, pids, stop }
  return { ok: true, target }
}

/** A base port of the plan whose nodes' HTTP and gRPC ports are all free now (a small race with
 * other programs, as for every target's port), or null. */
async function freeBase(): Promise<number | null> {
  for (let attempt = 0; attempt < BASE_ATTEMPTS; attempt++) {
    const base = (await freePort()) - 1 // Node 1's HTTP port is the base plus one.
    const ports = Array.from({ length: NODE_COUNT }, (_, at) => [
      base + 1 + at,
      base + GRPC_PORT_OFFSET + 1 + at,
    ]).flat()
    const free = await Promise.all(ports.map((port) => portFree(port)))
    if (free.every(Boolean)) return base
  }
  return null
}

function portFree(port: number): Promise<boolean> {
  if (port > 65_535) return Promise.resolve(false)
  return new Promise((resolve) => {
    const server = createServer()
    server.once('error', () => resolve(false))
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)))
  })
}

/** Null once every node's /admin/cluster/health counts all of them Alive; else why not. */
async function allAlive(nodes: readonly Endpoint[], deadlineMs: number): Promise<string | null> {
  let last = 'no answer'
  const pollsMax = Math.ceil(CLUSTER_HEALTH_WAIT_MS / ALIVE_POLL_MS)
  for (let poll = 0; poll < pollsMax && Date.now() < deadlineMs; poll++) {
    const alive = await Promise.all(nodes.map((node) => aliveSeenBy(node)))
    const short = alive.findIndex((count) => count !== nodes.length)
    if (short === -1) return null
    last = `n${short + 1} sees ${alive[short] ?? 'no answer'} of ${nodes.length} nodes Alive`
    await sleep(ALIVE_POLL_MS)
  }
  return `not all Alive within ${CLUSTER_HEALTH_WAIT_MS} ms (${last})`
}

/** How many storage nodes `node` sees Alive, or null without an answer. */
async function aliveSeenBy(node: Endpoint): Promise<number | null> {
  if (node.presign === null) return null
  try {
    const path = await node.presign('GET', '/admin/cluster/health')
    const response = await request(node.origin + path, { headersTimeout: 2000, bodyTimeout: 2000 })
    const text = await response.body.text()
    if (response.statusCode !== 200) return null
    const alive = (JSON.parse(text) as { nodes?: { alive?: unknown } }).nodes?.alive
    return typeof alive === 'number' ? alive : null
  } catch {
    return null // Not serving yet, or slow: asked again at the next poll.
  }
}
