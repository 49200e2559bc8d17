/** @module Composition root of a node: answers --help and --version, reads the configuration,
 * checks the environment (data directory, TLS files), prepares the node's secrets, starts the
 * supervised actor mesh and handles signals. The ingress starts first and answers 503 until every
 * actor is up. SIGTERM/SIGINT stop it gracefully: the ingress answers 503 to new requests while
 * in-flight ones drain (SHUTDOWN_DRAIN_MS), then closes its port; the other actors stop in reverse
 * start order, the store closes cleanly, and the runtime closes the metadata database it opened
 * before any actor; exit 0. A crash loop exits 1. A setting or an
 * environment the node cannot run with (runtime/fatal.ts) exits 2 with one line on stderr, at start
 * or when an actor meets it later; it is never restarted. */
import { setFlagsFromString } from 'node:v8'
import { STREAM_CHUNK_BYTES } from '../protocol/limits.js'
import { loadConfig } from './config.js'
import { actorTable } from './actor-table.js'
import { loadClusterSettings } from './cluster-config.js'
import { clusterKey } from './cluster/cluster-key.js'
import { NODE_UMASK, prepareDataDir } from './data-dir.js'
import { EXIT_UNUSABLE, fatalLine } from './fatal.js'
import { FATAL_STOP_TIMEOUT_MS, SHUTDOWN_DRAIN_MS } from './knobs.js'
import { createLogger } from './log.js'
import { loadNodeSecrets } from './node-secrets.js'
import { NodeMetrics } from './node-metrics.js'
import { mapLargeAllocations, startNativeTrimmer } from './native-trim.js'
import { checkNodeVersion } from './node-version.js'
import { Supervisor } from './supervisor.js'
import { openMetadata } from './storage.js'
import { readTlsPair } from './tls-files.js'
import { usage, version } from './usage.js'
import { withTimeout } from '../protocol/timing.js'

// First: every file and directory the node creates (RocksDB's, blob files) is owner-only.
process.umask(NODE_UMASK)

async function main(): Promise<void> {
  checkNodeVersion(process.versions.node)
  const config = loadConfig(process.env)
  const cluster = config.mode === 'single' ? null : loadClusterSettings(process.env, config.mode)
  const log = createLogger('supervisor')
  for (const warning of cluster?.warnings ?? []) log.warn({}, warning)
  // A gateway stores nothing: no data directory, no sealed secrets.
  if (config.mode !== 'gateway') prepareDataDir(config.dataDir)
  const { SVC_TLS_CERT: cert, SVC_TLS_KEY: key } = config.actorConfig
  if (cert !== undefined && key !== undefined) readTlsPair(cert, key)
  const nodeKey =
    cluster === null ? null : clusterKey({ ...config.actorConfig, ...cluster.actorConfig })
  const secrets =
    config.mode === 'gateway'
      ? {}
      : await loadNodeSecrets(config.dataDir, process.env, nodeKey?.key ?? null)
  const table = actorTable(config.mode)
  // Before any thread allocates a chunk: see runtime/native-trim.ts.
  await mapLargeAllocations(STREAM_CHUNK_BYTES)
  // Owned here, so that no actor's death closes what another thread reads.
  const metadata = config.mode === 'gateway' ? null : await openMetadata(config.dataDir)
  let stopping: Promise<void> | null = null
  /** Stops the actors, then closes the database none of them uses any more. */
  const stop = (drainMs: number): Promise<void> =>
    supervisor.stop(drainMs).then(() => metadata?.close())
  const supervisor: Supervisor = new Supervisor({
    actors: table.actors,
    instances: {
      'http-ingress': config.httpWorkers,
      'replica-store': config.storeShards,
      coordinator: config.coordinators,
    },
    links: table.links,
    config: { ...config.actorConfig, ...cluster?.actorConfig, ...secrets, SVC_VERSION: version() },
    metadata: metadata?.handle ?? null,
    ingress: 'http-ingress',
    chaos: config.chaos,
    metrics: new NodeMetrics(config.mode),
    log,
    onEscalate: (exitCode, reason) => {
      if (exitCode !== 0) log.error({ reason }, 'escalating: stopping the node')
      stopping ??= stop(SHUTDOWN_DRAIN_MS).finally(() => process.exit(exitCode))
    },
    onFatal: (failure) => {
      if (stopping !== null) return
      console.error(fatalLine(failure))
      // No drain: the node cannot serve. The stop closes the store cleanly, but the exit comes
      // within FATAL_STOP_TIMEOUT_MS even if an actor does not stop.
      stopping = withTimeout(stop(0), FATAL_STOP_TIMEOUT_MS, 'stopping')
        .catch(() => undefined)
        .finally(() => process.exit(EXIT_UNUSABLE))
    },
  })
  const onSignal = (signal: string): void => {
    log.info({ signal }, 'graceful shutdown')
    stopping ??= stop(SHUTDOWN_DRAIN_MS).finally(() => process.exit(0))
  }
  process.on('SIGTERM', () => onSignal('SIGTERM'))
  process.on('SIGINT', () => onSignal('SIGINT'))
  if (!(await supervisor.start())) return // The node is stopping: a signal, or a fatal failure.
  await startNativeTrimmer()
  log.info({ host: config.httpHost, port: config.httpPort, dataDir: config.dataDir }, 'node ready')
}

/** --help and --version answer without starting anything; another argument is a usage error. */
function answerArguments(args: readonly string[]): boolean {
  if (args.length === 0) return false
  if (args.length === 1 && (args[0] === '--help' || args[0] === '-h')) {
    process.stdout.write(usage())
  } else if (args.length === 1 && args[0] === '--version') {
    process.stdout.write(`${version()}\n`)
  } else {
    process.stderr.write(`unknown arguments: ${args.join(' ')}\n\n${usage()}`)
    process.exitCode = EXIT_UNUSABLE
  }
  return true
}

if (!answerArguments(process.argv.slice(2))) {
  // Actor threads created after this see `gc`, which runtime/reclaim.ts uses to free body chunks.
  setFlagsFromString('--expose-gc')
  main().catch((error: unknown) => {
    const line = fatalLine(error)
    if (line !== null) {
      console.error(line)
      process.exit(EXIT_UNUSABLE)
    }
    createLogger('supervisor').error({ err: error }, 'node failed to start')
    process.exit(1)
  })
}
