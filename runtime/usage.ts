/** @module What `--help` and `--version` print, before anything starts: the usage, every SVC_*
 * variable the node reads with its default and meaning (the README's configuration table says the
 * same at length; a unit test keeps the two lists of names equal), the exit codes, and the version
 * from package.json. */
import { readFileSync } from 'node:fs'

export interface Variable {
  name: string
  fallback: string
  meaning: string
}

export const VARIABLES: readonly Variable[] = [
  { name: 'SVC_MODE', fallback: 'single', meaning: 'single, cluster (storage node) or gateway' },
  { name: 'SVC_NODE_HTTP_ADDR', fallback: '0.0.0.0:9000', meaning: 'host:port of the S3 port' },
  { name: 'SVC_HTTP_WORKERS', fallback: 'cores - 2, 1 to 4', meaning: 'HTTP threads (1 to 64)' },
  { name: 'SVC_STORE_SHARDS', fallback: 'cores, up to 16', meaning: 'store threads (single node)' },
  {
    name: 'SVC_COORDINATORS',
    fallback: 'cores, up to 16',
    meaning: 'coordinator threads (cluster)',
  },
  { name: 'SVC_DATA_DIR', fallback: './data', meaning: 'data directory (made owner-only)' },
  { name: 'SVC_ACCESS_KEY_ID', fallback: 'generated', meaning: 'bootstrap S3 access key' },
  { name: 'SVC_SECRET_ACCESS_KEY', fallback: 'generated', meaning: 'bootstrap S3 secret key' },
  { name: 'SVC_MASTER_KEY', fallback: '<data>/master.key', meaning: 'key of secrets at rest' },
  { name: 'SVC_TLS_CERT', fallback: 'unset', meaning: 'PEM certificate: serve HTTPS' },
  { name: 'SVC_TLS_KEY', fallback: 'unset', meaning: 'PEM private key of SVC_TLS_CERT' },
  { name: 'SVC_DOMAIN', fallback: 'unset', meaning: 'virtual-hosted style: {bucket}.{domain}' },
  { name: 'SVC_REGION', fallback: 'us-east-1', meaning: 'region the S3 API reports' },
  { name: 'SVC_CHAOS', fallback: 'unset', meaning: '1: enable the actor kill route (tests)' },
  { name: 'SVC_LOG_LEVEL', fallback: 'info', meaning: 'trace debug info warn error fatal silent' },
  { name: 'SVC_ROOT_USERNAME', fallback: 'root', meaning: 'name of the root SuperUser' },
  { name: 'SVC_ROOT_PASSWORD', fallback: 'unset', meaning: 'creates the root user: admin API on' },
  { name: 'SVC_JWT_SECRET', fallback: '<data>/jwt.secret', meaning: 'HMAC secret of admin tokens' },
  { name: 'SVC_JWT_TTL_SECS', fallback: '3600', meaning: 'admin token lifetime in seconds' },
  {
    name: 'SVC_MULTIPART_EXPIRY_HOURS',
    fallback: '24',
    meaning: 'incomplete uploads aborted after',
  },
  { name: 'SVC_SCRUBBER_FULL_SCAN_DAYS', fallback: '30', meaning: 'CRC32 full scan cycle' },
  {
    name: 'SVC_LIFECYCLE_INTERVAL_SECS',
    fallback: '3600',
    meaning: 'lifecycle passes start apart',
  },
  {
    name: 'SVC_LIFECYCLE_ACTIONS_PER_SECOND',
    fallback: '100',
    meaning: 'lifecycle expiries a second at most',
  },
  { name: 'SVC_LIFECYCLE_DAY_SECS', fallback: '86400', meaning: "a lifecycle rule's day (tests)" },
  // Cluster and gateway modes.
  { name: 'SVC_CLUSTER_NAME', fallback: 'unset', meaning: 'cluster name, equal on every member' },
  { name: 'SVC_NODE_ID', fallback: 'unset', meaning: "this member's name (n1, g1...)" },
  { name: 'SVC_NODE_GRPC_ADDR', fallback: '0.0.0.0:9100', meaning: 'host:port, node-to-node' },
  { name: 'SVC_SEEDS', fallback: 'unset', meaning: 'gRPC addresses to join through' },
  { name: 'SVC_POOL_NAME', fallback: 'unset', meaning: 'pool of this storage node' },
  { name: 'SVC_POOL_NODES', fallback: 'unset', meaning: 'id:host:grpcport of each pool member' },
  { name: 'SVC_CLUSTER_SECRET', fallback: 'derived', meaning: 'node-to-node key (32+ chars)' },
  { name: 'SVC_GRPC_TLS_CERT', fallback: 'unset', meaning: 'PEM certificate for gRPC' },
  { name: 'SVC_GRPC_TLS_KEY', fallback: 'unset', meaning: 'PEM key of SVC_GRPC_TLS_CERT' },
  { name: 'SVC_GRPC_TLS_CA', fallback: 'unset', meaning: "PEM CA every member's cert chains to" },
  { name: 'SVC_REPLICATION_FACTOR', fallback: '3', meaning: 'replicas per object' },
  { name: 'SVC_WRITE_QUORUM', fallback: '2', meaning: 'acknowledgements a write needs' },
  { name: 'SVC_READ_QUORUM', fallback: '2', meaning: 'answers a read needs' },
  { name: 'SVC_GC_GRACE_DAYS', fallback: '7', meaning: 'days tombstones are kept' },
  { name: 'SVC_MAX_REJOIN_DOWNTIME_DAYS', fallback: '3', meaning: 'days down before bootstrap' },
  { name: 'SVC_ANTI_ENTROPY_INTERVAL_SECS', fallback: '600', meaning: 'Merkle sync interval' },
  { name: 'SVC_HINT_TTL_HOURS', fallback: '3', meaning: 'hinted handoff lifetime' },
]

export function version(): string {
  // dist/runtime/usage.js and runtime/usage.ts both sit two levels below package.json.
  const manifest = readFileSync(new URL('../../package.json', import.meta.url), 'utf8')
  return (JSON.parse(manifest) as { version: string }).version
}

export function usage(): string {
  const nameWidth = Math.max(...VARIABLES.map((v) => v.name.length))
  const fallbackWidth = Math.max(...VARIABLES.map((v) => v.fallback.length))
  const rows = VARIABLES.map(
    (v) => `  ${v.name.padEnd(nameWidth)}  ${v.fallback.padEnd(fallbackWidth)}  ${v.meaning}`,
  )
  return [
    `svc-object-store ${version()}: an S3-compatible object store`,
    '',
    'Usage: node dist/runtime/main.js [--help | --version]   (or: npm start)',
    '',
    'Configured by environment variables:',
    `  ${'Variable'.padEnd(nameWidth)}  ${'Default'.padEnd(fallbackWidth)}  Meaning`,
    ...rows,
    '',
    'Exit codes: 0 stopped by SIGTERM or SIGINT; 1 crash loop or internal fault;',
    '2 a setting or the environment must be fixed (one line on stderr names the variable).',
    '',
  ].join('\n')
}
