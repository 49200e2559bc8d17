/** @module The settings of cluster and gateway mode (SPEC.md section 8, CLUSTER-INTERFACE.md),
 * validated at start: a node that cannot take part in its cluster as configured exits with one
 * line naming the variable rather than joining half right. Defaults are SPEC.md's. Durations
 * accept fractions so that a test runs in seconds. Settings that are legal but unwise (W + R not
 * above RF, a derived cluster key) come back as warnings for the node to log. */
import { parsePoolNodes, type PoolNode } from '../protocol/placement.js'
import { ConfigError, parseHostPort } from './config.js'

export const DEFAULT_GRPC_ADDR = '0.0.0.0:9100'
const CLUSTER_SECRET_CHARS_MIN = 32
/** Names that travel in gossip, metric labels and file names: short and plain. */
const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/

export interface ClusterSettings {
  /** Entries for the actors' flat config record. */
  actorConfig: Record<string, string>
  warnings: string[]
  poolNodes: PoolNode[]
}

type Env = NodeJS.ProcessEnv

/** Numbers of SPEC.md's tuning table: [variable, default, integer?]. SVC_SCRUBBER_FULL_SCAN_DAYS
 * is config.ts's: single nodes scrub too. */
const TUNING: readonly [string, string, boolean][] = [
  ['SVC_REPLICATION_FACTOR', '3', true],
  ['SVC_WRITE_QUORUM', '2', true],
  ['SVC_READ_QUORUM', '2', true],
  ['SVC_GC_GRACE_DAYS', '7', false],
  ['SVC_MAX_REJOIN_DOWNTIME_DAYS', '3', false],
  ['SVC_ANTI_ENTROPY_INTERVAL_SECS', '600', false],
  ['SVC_HINT_TTL_HOURS', '3', false],
]

export function loadClusterSettings(env: Env, mode: 'cluster' | 'gateway'): ClusterSettings {
  const warnings: string[] = []
  const clusterName = requiredName(env, 'SVC_CLUSTER_NAME')
  const nodeId = requiredName(env, 'SVC_NODE_ID')
  const grpcAddr = env['SVC_NODE_GRPC_ADDR'] || DEFAULT_GRPC_ADDR
  parseHostPort(grpcAddr, 'SVC_NODE_GRPC_ADDR')
  const seeds = parseSeeds(env['SVC_SEEDS'] ?? '')
  if (env['SVC_ACCESS_KEY_ID'] === undefined || env['SVC_SECRET_ACCESS_KEY'] === undefined) {
    throw new ConfigError(
      `SVC_ACCESS_KEY_ID and SVC_SECRET_ACCESS_KEY must be set in ${mode} mode, identical on ` +
        'every node: generated keys would differ from node to node',
    )
  }
  const secret = env['SVC_CLUSTER_SECRET']
  if (secret !== undefined && secret !== '' && secret.length < CLUSTER_SECRET_CHARS_MIN) {
    throw new ConfigError(
      `SVC_CLUSTER_SECRET must have at least ${CLUSTER_SECRET_CHARS_MIN} characters`,
    )
  }
  if (secret === undefined || secret === '') {
    warnings.push(
      'SVC_CLUSTER_SECRET is not set: node-to-node calls are authenticated with a key derived ' +
        'from SVC_SECRET_ACCESS_KEY and SVC_CLUSTER_NAME; set a dedicated secret of 32 ' +
        'characters or more',
    )
  }
  checkTlsTriple(env)
  // Gossip tells the others this address: gateways forward requests to it.
  const httpAddr = env['SVC_NODE_HTTP_ADDR'] || '0.0.0.0:9000'
  if (/^(0\.0\.0\.0|\[::\]):/.test(httpAddr) || /^(0\.0\.0\.0|\[::\]):/.test(grpcAddr)) {
    warnings.push(
      'SVC_NODE_HTTP_ADDR or SVC_NODE_GRPC_ADDR is a wildcard address: the other nodes and the ' +
        'gateways are told an address they cannot reach; set the address they reach this node at',
    )
  }
  const actorConfig: Record<string, string> = {
    SVC_NODE_HTTP_ADDR: httpAddr,
    SVC_CLUSTER_NAME: clusterName,
    SVC_NODE_ID: nodeId,
    SVC_NODE_GRPC_ADDR: grpcAddr,
    SVC_SEEDS: seeds.join(','),
  }
  for (const name of [
    'SVC_CLUSTER_SECRET',
    'SVC_GRPC_TLS_CERT',
    'SVC_GRPC_TLS_KEY',
    'SVC_GRPC_TLS_CA',
  ]) {
    const value = env[name]
    if (value !== undefined && value !== '') actorConfig[name] = value
  }
  if (mode === 'gateway') {
    if (seeds.length === 0)
      throw new ConfigError('SVC_SEEDS must name at least one node in gateway mode')
    return { actorConfig, warnings, poolNodes: [] }
  }
  const poolName = requiredName(env, 'SVC_POOL_NAME')
  const poolNodes = parsePoolNodes(env['SVC_POOL_NODES'] ?? '')
  if (typeof poolNodes === 'string') throw new ConfigError(`SVC_POOL_NODES: ${poolNodes}`)
  if (!poolNodes.some((node) => node.id === nodeId)) {
    throw new ConfigError(`SVC_POOL_NODES must list this node (SVC_NODE_ID=${nodeId})`)
  }
  const tuning = parseTuning(env)
  const rf = tuning['SVC_REPLICATION_FACTOR'] as number
  if (rf > poolNodes.length) {
    const nodes = poolNodes.length
    throw new ConfigError(
      `SVC_REPLICATION_FACTOR (${rf}) must not exceed the nodes of SVC_POOL_NODES (${nodes})`,
    )
  }
  for (const quorum of ['SVC_WRITE_QUORUM', 'SVC_READ_QUORUM']) {
    if ((tuning[quorum] as number) > rf) {
      throw new ConfigError(
        `${quorum} (${tuning[quorum]}) must not exceed SVC_REPLICATION_FACTOR (${rf})`,
      )
    }
  }
  const w = tuning['SVC_WRITE_QUORUM'] as number
  const r = tuning['SVC_READ_QUORUM'] as number
  if (w + r <= rf) {
    warnings.push(
      `SVC_WRITE_QUORUM + SVC_READ_QUORUM (${w} + ${r}) is not above SVC_REPLICATION_FACTOR ` +
        `(${rf}): a read may miss the latest acknowledged write`,
    )
  }
  const graceDays = tuning['SVC_GC_GRACE_DAYS'] as number
  const rejoinDays = tuning['SVC_MAX_REJOIN_DOWNTIME_DAYS'] as number
  if (graceDays <= rejoinDays) {
    throw new ConfigError(
      `SVC_GC_GRACE_DAYS (${graceDays}) must be longer than SVC_MAX_REJOIN_DOWNTIME_DAYS ` +
        `(${rejoinDays}): a node back within the rejoin window must still find every tombstone`,
    )
  }
  actorConfig['SVC_POOL_NAME'] = poolName
  actorConfig['SVC_POOL_NODES'] = poolNodes.map((n) => `${n.id}:${n.host}:${n.port}`).join(',')
  for (const [name, value] of Object.entries(tuning)) actorConfig[name] = String(value)
  return { actorConfig, warnings, poolNodes }
}

function requiredName(env: Env, name: string): string {
  const value = env[name]
  if (value === undefined || value === '') throw new ConfigError(`${name} must be set`)
  if (!NAME_PATTERN.test(value)) {
    throw new ConfigError(`${name} must be 1 to 63 letters, digits, dots, dashes or underscores`)
  }
  return value
}

function parseSeeds(value: string): string[] {
  const seeds = value
    .split(',')
    .map((seed) => seed.trim())
    .filter((seed) => seed !== '')
  for (const seed of seeds) parseHostPort(seed, 'SVC_SEEDS entry')
  return seeds
}

function checkTlsTriple(env: Env): void {
  const names = ['SVC_GRPC_TLS_CERT', 'SVC_GRPC_TLS_KEY', 'SVC_GRPC_TLS_CA']
  const set = names.filter((name) => (env[name] ?? '') !== '')
  if (set.length !== 0 && set.length !== names.length) {
    throw new ConfigError(`set all of ${names.join(', ')}, or none`)
  }
}

function parseTuning(env: Env): Record<string, number> {
  const values: Record<string, number> = {}
  for (const [name, fallback, integer] of TUNING) {
    const raw = env[name] === undefined || env[name] === '' ? fallback : (env[name] as string)
    const value = Number(raw)
    const pattern = integer ? /^\d+$/ : /^\d+(\.\d+)?$/
    if (!pattern.test(raw) || value <= 0 || !Number.isFinite(value)) {
      const kind = integer ? 'an integer' : 'a number'
      throw new ConfigError(`${name} must be ${kind} above 0, got ${JSON.stringify(raw)}`)
    }
    values[name] = value
  }
  return values
}
