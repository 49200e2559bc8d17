/** @module Node configuration from the environment, validated once at start. Actors receive the
 * resulting flat record; nothing else reads process.env. */
import { LIFECYCLE_SETTINGS } from '../protocol/lifecycle.js'
import { availableParallelism } from 'node:os'
import { resolve } from 'node:path'
import { DEFAULT_HTTP_WORKERS_MAX, DEFAULT_HTTP_WORKERS_RESERVED_CORES } from './knobs.js'
import { isAcceptablePassword, isValidUsername } from '../protocol/identity.js'
import { LOG_LEVELS } from './log.js'
import { STORE_SHARDS_MAX } from '../protocol/limits.js'

export interface NodeConfig {
  mode: 'single' | 'cluster' | 'gateway'
  dataDir: string
  httpHost: string
  httpPort: number
  /** Ingress threads sharing the HTTP port. */
  httpWorkers: number
  /** Store threads, each owning a part of the key space (runtime/store-shards.ts). */
  storeShards: number
  /** A cluster node's coordinator threads, each coordinating a part of the key space. */
  coordinators: number
  chaos: boolean
  /** The flat record handed to every actor. */
  actorConfig: Record<string, string>
}

const PASSED_THROUGH = [
  'SVC_ACCESS_KEY_ID',
  'SVC_SECRET_ACCESS_KEY',
  'SVC_TLS_CERT',
  'SVC_TLS_KEY',
  'SVC_DOMAIN',
  'SVC_REGION',
  'SVC_LOG_LEVEL',
  'SVC_ROOT_USERNAME',
  'SVC_ROOT_PASSWORD',
  'SVC_JWT_TTL_SECS',
  'SVC_MULTIPART_EXPIRY_HOURS',
] as const

export class ConfigError extends Error {
  override name = 'ConfigError'
}

export function parseHostPort(value: string, what: string): { host: string; port: number } {
  const match = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(value)
  const port = Number(match?.[2])
  if (match === null || !Number.isInteger(port) || port > 65535) {
    throw new ConfigError(`${what} must be host:port, got ${JSON.stringify(value)}`)
  }
  return { host: (match[1] ?? '').replace(/^\[|\]$/g, ''), port }
}

export function loadConfig(env: NodeJS.ProcessEnv): NodeConfig {
  const mode = env['SVC_MODE'] ?? 'single'
  if (mode !== 'single' && mode !== 'cluster' && mode !== 'gateway') {
    throw new ConfigError(
      `SVC_MODE must be single, cluster or gateway, got ${JSON.stringify(mode)}`,
    )
  }
  const dataDir = resolve(env['SVC_DATA_DIR'] ?? './data')
  const http = parseHostPort(env['SVC_NODE_HTTP_ADDR'] ?? '0.0.0.0:9000', 'SVC_NODE_HTTP_ADDR')
  const httpWorkers = parseHttpWorkers(env['SVC_HTTP_WORKERS'])
  const storeShards = parseKeyedThreads(
    'SVC_STORE_SHARDS',
    env['SVC_STORE_SHARDS'],
    mode,
    'single',
    'is for a single node; a cluster node runs 1',
  )
  const coordinators = parseKeyedThreads(
    'SVC_COORDINATORS',
    env['SVC_COORDINATORS'],
    mode,
    'cluster',
    'is for a cluster node; others run none',
  )
  const keyId = env['SVC_ACCESS_KEY_ID']
  const secret = env['SVC_SECRET_ACCESS_KEY']
  if ((keyId === undefined) !== (secret === undefined)) {
    throw new ConfigError('set both SVC_ACCESS_KEY_ID and SVC_SECRET_ACCESS_KEY, or neither')
  }
  if ((env['SVC_TLS_CERT'] === undefined) !== (env['SVC_TLS_KEY'] === undefined)) {
    throw new ConfigError('set both SVC_TLS_CERT and SVC_TLS_KEY, or neither')
  }
  checkIdentitySettings(env)
  checkStorageSettings(env)
  checkLogLevel(env['SVC_LOG_LEVEL'])
  const actorConfig: Record<string, string> = {
    SVC_MODE: mode,
    SVC_DATA_DIR: dataDir,
    SVC_HTTP_HOST: http.host,
    SVC_HTTP_PORT: String(http.port),
    SVC_HTTP_WORKERS: String(httpWorkers),
    SVC_STORE_SHARDS: String(storeShards),
    SVC_COORDINATORS: String(coordinators),
    SVC_CHAOS: env['SVC_CHAOS'] === '1' ? '1' : '0',
    SVC_SCRUBBER_FULL_SCAN_DAYS: String(scanDays(env['SVC_SCRUBBER_FULL_SCAN_DAYS'])),
    ...lifecycleSettings(env),
  }
  for (const name of PASSED_THROUGH) {
    const value = env[name]
    if (value !== undefined && value !== '') actorConfig[name] = value
  }
  return {
    mode,
    dataDir,
    httpHost: http.host,
    httpPort: http.port,
    httpWorkers,
    storeShards,
    coordinators,
    chaos: actorConfig['SVC_CHAOS'] === '1',
    actorConfig,
  }
}

function checkLogLevel(level: string | undefined): void {
  if (level === undefined || level === '' || LOG_LEVELS.includes(level)) return
  throw new ConfigError(
    `SVC_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(level)}`,
  )
}

/** More ingress threads than this only contend for the cores the other actors need. */
const HTTP_WORKERS_MAX = 64

/** Ingress threads (knobs.ts has the default). Several threads share the port through
 * SO_REUSEPORT, which the node opens on Linux only. */
function parseHttpWorkers(value: string | undefined): number {
  if (value === undefined || value === '') {
    if (process.platform !== 'linux') return 1
    const spare = availableParallelism() - DEFAULT_HTTP_WORKERS_RESERVED_CORES
    return Math.min(Math.max(1, spare), DEFAULT_HTTP_WORKERS_MAX)
  }
  const workers = Number(value)
  if (!/^\d+$/.test(value) || workers < 1 || workers > HTTP_WORKERS_MAX) {
    throw new ConfigError(`SVC_HTTP_WORKERS must be an integer from 1 to ${HTTP_WORKERS_MAX}`)
  }
  if (workers > 1 && process.platform !== 'linux') {
    throw new ConfigError(
      'SVC_HTTP_WORKERS above 1 needs SO_REUSEPORT, which this node opens on Linux only',
    )
  }
  return workers
}

/** Threads of a role that takes requests by key (runtime/store-shards.ts), in the one mode that
 * runs several, by default one per core; elsewhere 1, and a count above 1 is refused (`why`). The
 * store is sharded on a single node only: a cluster node's replication paths (stamps, digests,
 * the catalog, hints) keep one owner per node. A cluster node's coordinators are several, so that
 * no one thread serialises its quorum paths; a single node and a gateway run none. */
function parseKeyedThreads(
  name: 'SVC_STORE_SHARDS' | 'SVC_COORDINATORS',
  value: string | undefined,
  mode: NodeConfig['mode'],
  runsSeveral: NodeConfig['mode'],
  why: string,
): number {
  if (value === undefined || value === '') {
    return mode === runsSeveral ? Math.min(availableParallelism(), STORE_SHARDS_MAX) : 1
  }
  const count = Number(value)
  if (!/^\d+$/.test(value) || count < 1 || count > STORE_SHARDS_MAX) {
    throw new ConfigError(`${name} must be an integer from 1 to ${STORE_SHARDS_MAX}`)
  }
  if (count > 1 && mode !== runsSeveral) throw new ConfigError(`${name} above 1 ${why}`)
  return count
}

/** Incomplete multipart uploads are reclaimed after this many hours: at most a year; fractions
 * are allowed (a test waits seconds, not hours). */
const MULTIPART_EXPIRY_HOURS_MAX = 365 * 24

function checkStorageSettings(env: NodeJS.ProcessEnv): void {
  const hours = env['SVC_MULTIPART_EXPIRY_HOURS']
  if (hours === undefined || hours === '') return
  const value = Number(hours)
  if (!/^\d+(\.\d+)?$/.test(hours) || value <= 0 || value > MULTIPART_EXPIRY_HOURS_MAX) {
    throw new ConfigError(
      `SVC_MULTIPART_EXPIRY_HOURS must be hours above 0, at most ${MULTIPART_EXPIRY_HOURS_MAX}`,
    )
  }
}

/** The scrubber's full scan cycle (single and cluster mode): days above 0, fractions allowed (a
 * test scans in seconds), at most ten years. */
const SCAN_DAYS_DEFAULT = 30
const SCAN_DAYS_MAX = 3_650

/** The lifecycle actor's settings (protocol/lifecycle.ts), each a positive number within its
 * bound, its default when unset. */
function lifecycleSettings(env: Record<string, string | undefined>): Record<string, string> {
  const settings: Record<string, string> = {}
  for (const [name, fallback, max, whole] of Object.values(LIFECYCLE_SETTINGS)) {
    const value = env[name]
    if (value === undefined || value === '') {
      settings[name] = String(fallback)
      continue
    }
    const number = Number(value)
    const pattern = whole ? /^\d+$/ : /^\d+(\.\d+)?$/
    if (!pattern.test(value) || number <= 0 || number > max) {
      const kind = whole ? 'a whole number' : 'a number'
      throw new ConfigError(
        `${name} must be ${kind} above 0, at most ${max}, got ${JSON.stringify(value)}`,
      )
    }
    settings[name] = value
  }
  return settings
}

function scanDays(value: string | undefined): number {
  if (value === undefined || value === '') return SCAN_DAYS_DEFAULT
  const days = Number(value)
  if (!/^\d+(\.\d+)?$/.test(value) || days <= 0 || days > SCAN_DAYS_MAX) {
    throw new ConfigError(
      `SVC_SCRUBBER_FULL_SCAN_DAYS must be days above 0, at most ${SCAN_DAYS_MAX}, got ` +
        JSON.stringify(value),
    )
  }
  return days
}

/** A JWT lifetime above a week makes a stolen token too valuable; below a second, unusable. */
const JWT_TTL_SECS_MAX = 7 * 24 * 3600

function checkIdentitySettings(env: NodeJS.ProcessEnv): void {
  const username = env['SVC_ROOT_USERNAME']
  if (username !== undefined && username !== '' && !isValidUsername(username)) {
    throw new ConfigError('SVC_ROOT_USERNAME must be 3 to 32 letters, digits or underscores')
  }
  const password = env['SVC_ROOT_PASSWORD']
  if (password !== undefined && password !== '' && !isAcceptablePassword(password)) {
    throw new ConfigError('SVC_ROOT_PASSWORD must be at most 1024 bytes')
  }
  const ttl = env['SVC_JWT_TTL_SECS']
  if (ttl !== undefined && ttl !== '') {
    const secs = Number(ttl)
    if (!/^\d+$/.test(ttl) || secs < 1 || secs > JWT_TTL_SECS_MAX) {
      throw new ConfigError(`SVC_JWT_TTL_SECS must be an integer from 1 to ${JWT_TTL_SECS_MAX}`)
    }
  }
}
