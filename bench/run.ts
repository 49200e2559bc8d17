/** @module `npm run bench`: measures the service, s3rver, nginx (WebDAV), the floor of a Node.js
 * server (floor-main.ts) and a 3-node cluster of the service one after the other on 127.0.0.1,
 * each in its own child processes and temp dir, with wrk as the load generator, then prints the
 * tables of report.ts and appends them, dated, to bench/results.md (results-file.ts). A target
 * that is missing or does not come up is reported and skipped; figures are printed, never judged
 * by the exit code, which is 0 unless the bench itself broke, wrk is missing or the results file
 * could not be written. On SIGINT or SIGTERM the running target
 * is stopped by its PID and its temp dir removed before we exit (wrk.ts kills its own). */
import { availableParallelism, loadavg } from 'node:os'
import { BIG_BYTES, LIST_KEYS, ONLY_PHASES, ONLY_TARGETS, PHASE_RUNS } from './config.js'
import { PHASE_SECONDS } from './config.js'
import { runClusterSuite, type ClusterResults } from './cluster-suite.js'
import { printReport, type AllResults } from './report.js'
import { appendResults, describeCommit, RESULTS_FILE, Transcript } from './results-file.js'
import { runSuite } from './suite.js'
import { start, TARGET_NAMES, type Target, type TargetName } from './targets.js'
import { wrkMissing } from './wrk.js'

interface Running {
  target: Target | null
  /** A target is starting: its child is not ours to stop until start() returns. */
  starting: boolean
  interrupted: boolean
}

async function main(): Promise<void> {
  const missing = wrkMissing()
  if (missing !== null) {
    console.log(`bench: cannot load the servers: ${missing}`)
    process.exitCode = 1
    return
  }
  const startedAt = new Date()
  const commit = describeCommit()
  const runs = PHASE_RUNS === 1 ? '' : `, each run ${PHASE_RUNS} times`
  const only = [
    ...(ONLY_TARGETS.length > 0 ? [`only targets ${ONLY_TARGETS.join(', ')}`] : []),
    ...(ONLY_PHASES.length > 0 ? [`only phases naming ${ONLY_PHASES.join(', ')}`] : []),
  ]
  const settings =
    `phases up to ${PHASE_SECONDS} s${runs}, streamed object ${BIG_BYTES / 2 ** 20} MiB, ` +
    `listing over ${LIST_KEYS} keys; ${availableParallelism()} cores` +
    only.map((text) => `; ${text}`).join('')
  console.log(`bench: ${settings}`)
  const unknown = ONLY_TARGETS.filter((name) => !(TARGET_NAMES as readonly string[]).includes(name))
  if (unknown.length > 0) console.log(`bench: BENCH_TARGETS names no target: ${unknown.join(', ')}`)
  const running: Running = { target: null, starting: false, interrupted: false }
  const interrupt = (signal: NodeJS.Signals): void => {
    console.log(`\nbench: ${signal}, stopping`)
    running.interrupted = true
    if (running.starting) return // The loop stops the target as soon as start() hands it over.
    const stopping = running.target?.stop() ?? Promise.resolve()
    stopping.finally(() => process.exit(130)).catch(() => process.exit(130))
  }
  process.once('SIGINT', interrupt)
  process.once('SIGTERM', interrupt)
  const results: AllResults = new Map()
  let cluster: ClusterResults | null = null
  const skipped = new Map<TargetName, string>()
  const loadAverages = new Map<string, string>()
  for (const name of TARGET_NAMES) {
    if (ONLY_TARGETS.length > 0 && !ONLY_TARGETS.includes(name)) continue
    const targetStartedAt = Date.now()
    // Client and server share these cores: other work on the machine shows in the figures.
    loadAverages.set(name, loadAverage())
    console.log(`\n# ${name} (load average ${loadAverages.get(name)})`)
    running.starting = true
    const started = await start(name)
    running.starting = false
    if (running.interrupted) {
      if (started.ok) await started.target.stop()
      process.exit(130)
    }
    if (!started.ok) {
      console.log(`  ${name}: skipped: ${started.reason}`)
      if (started.log !== undefined) console.log(`  ${name} log (tail):\n${started.log}`)
      skipped.set(name, started.reason)
      continue
    }
    running.target = started.target
    try {
      if (name === 'cluster') cluster = await runClusterSuite(started.target)
      else results.set(name, await runSuite(started.target))
    } catch (error) {
      console.log(`  ${name}: the bench broke: ${String(error)}`)
      skipped.set(name, `the bench broke: ${String(error)}`)
    } finally {
      await started.target.stop()
      running.target = null
    }
    console.log(`  ${name}: done in ${((Date.now() - targetStartedAt) / 1000).toFixed(0)} s`)
  }
  const transcript = new Transcript()
  printReport(transcript.print, results, cluster, skipped)
  if (results.size === 0 && cluster === null) return // Nothing measured: nothing to record.
  const failure = appendResults({ startedAt, commit, settings, loadAverages }, transcript)
  if (failure === null) console.log(`\nbench: results appended to ${RESULTS_FILE}`)
  else {
    console.log(`bench: could not append the results to ${RESULTS_FILE}: ${failure}`)
    process.exitCode = 1
  }
}

function loadAverage(): string {
  return loadavg()
    .map((load) => load.toFixed(2))
    .join(' ')
}

await main()
