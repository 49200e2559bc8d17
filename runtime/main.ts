/** @module Composition root of a node: reads the configuration, prepares the node's secrets, starts
 * the supervised actor mesh and handles signals. The ingress starts first and answers 503 until
 * every actor is up. SIGTERM/SIGINT stop it gracefully: the ingress answers 503 to new requests
 * while in-flight ones drain (SHUTDOWN_DRAIN_MS), then closes its port; the other actors stop in
 * reverse start order and the store closes cleanly; exit 0. A crash loop exits 1. */
import { setFlagsFromString } from 'node:v8'
import { STREAM_CHUNK_BYTES } from '../protocol/limits.js'
import { loadConfig, ConfigError } from './config.js'
import { SINGLE_NODE_ACTORS, SINGLE_NODE_LINKS } from './actor-table.js'
import { SHUTDOWN_DRAIN_MS } from './knobs.js'
import { createLogger } from './log.js'
import { loadNodeSecrets } from './node-secrets.js'
import { NodeMetrics } from './node-metrics.js'
import { mapLargeAllocations, startNativeTrimmer } from './native-trim.js'
import { checkNodeVersion } from './node-version.js'
import { Supervisor } from './supervisor.js'

const log = createLogger('supervisor')
// Actor threads created after this see `gc`, which runtime/reclaim.ts uses to free body chunks.
setFlagsFromString('--expose-gc')

async function main(): Promise<void> {
  checkNodeVersion(process.versions.node)
  const config = loadConfig(process.env)
  if (config.mode !== 'single') {
    throw new ConfigError(`SVC_MODE=${config.mode} is not available yet: this build runs single`)
  }
  const secrets = await loadNodeSecrets(config.dataDir, process.env)
  // Before any thread allocates a chunk: see runtime/native-trim.ts.
  await mapLargeAllocations(STREAM_CHUNK_BYTES)
  let stopping: Promise<void> | null = null
  const supervisor: Supervisor = new Supervisor({
    actors: SINGLE_NODE_ACTORS,
    instances: { 'http-ingress': config.httpWorkers },
    links: SINGLE_NODE_LINKS,
    config: { ...config.actorConfig, ...secrets },
    ingress: 'http-ingress',
    chaos: config.chaos,
    metrics: new NodeMetrics(config.mode),
    log,
    onEscalate: (exitCode, reason) => {
      if (exitCode !== 0) log.error({ reason }, 'escalating: stopping the node')
      stopping ??= supervisor.stop(SHUTDOWN_DRAIN_MS).finally(() => process.exit(exitCode))
    },
  })
  const onSignal = (signal: string): void => {
    log.info({ signal }, 'graceful shutdown')
    stopping ??= supervisor.stop(SHUTDOWN_DRAIN_MS).finally(() => process.exit(0))
  }
  process.on('SIGTERM', () => onSignal('SIGTERM'))
  process.on('SIGINT', () => onSignal('SIGINT'))
  if (!(await supervisor.start())) return // A signal arrived first: the node is stopping.
  await startNativeTrimmer()
  log.info({ host: config.httpHost, port: config.httpPort, dataDir: config.dataDir }, 'node ready')
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) {
    console.error(`configuration error: ${error.message}`)
    process.exit(2)
  }
  log.error({ err: error }, 'node failed to start')
  process.exit(1)
})
