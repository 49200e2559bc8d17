/** @module Test runner. `npm test` runs, each in its own child process so that nothing one starts
 * leaks into another: lint (prettier and ESLint, once), every compiled uvu suite (unit and
 * integration), and the S3 suites (those built on test/support/s3-suite.ts) again against a 3-node
 * cluster through a node (every case) and through a gateway (the cases marked smoke), one cluster
 * per pass. `npm run test:quick` (`--quick`) runs the unit suites alone (the simulator's fixed
 * seeds and the tidiness checks among them).
 *
 * Jobs share the machine's cores as slots, one each, the jobs that took longest in the last run
 * here first (dist/test/job-times.json), so that the run does not end on a long one. A suite that
 * bounds how fast something must happen runs beside others too: its bounds hold on a busy machine
 * (the issue's, with margins far above what it measures), and the run is bound by the CPU. Each
 * suite has a time limit; a suite past it is killed and counted as failed, and one that exits
 * non-zero without a uvu summary counts as one failure. A case that cannot run on this machine
 * says so (test/support/skip.ts): it is counted as skipped, not passed, and named before the
 * closing line `N passed, N failed, N skipped`. TEST_ONLY narrows the run to suites whose file
 * name contains it; TEST_TARGETS (default `cluster,gateway`, `none` for none) names the passes. */
import { spawn } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startCluster, type TestCluster } from './support/cluster.js'
import { SKIP_MARK } from './support/skip.js'

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, '..', '..')
const quick = process.argv.includes('--quick')
const SUITE_TIMEOUT_MS = 10 * 60 * 1000
/** A lint run is a few tens of seconds; this bounds a hung one. */
const LINT_TIMEOUT_MS = 5 * 60 * 1000
/** Jobs at once: the machine's cores, at least two, or TEST_SLOTS. */
const SLOTS = Number(process.env['TEST_SLOTS'] ?? Math.max(2, availableParallelism()))

interface Outcome {
  label: string
  passed: number
  failed: number
  /** The reasons of the cases that did not run here. */
  skipped: string[]
  output: string
  ms: number
}

/** Runs a command in a child process, its output held; killed past `timeoutMs`. */
function runChild(
  command: string,
  args: string[],
  env: Record<string, string>,
  timeoutMs: number,
): Promise<{ code: number | null; output: string; ms: number }> {
  const startedMs = Date.now()
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    })
    let output = ''
    const collect = (data: Buffer): void => {
      output += data.toString()
    }
    child.stdout.on('data', collect)
    child.stderr.on('data', collect)
    const timer = setTimeout(() => {
      output += `\ntimed out after ${timeoutMs} ms\n`
      child.kill('SIGKILL')
    }, timeoutMs)
    child.on('error', (error) => {
      output += `\n${String(error)}\n`
    })
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, output, ms: Date.now() - startedMs })
    })
  })
}

/** Runs one uvu suite and reads its summary ("Total: N", "Passed: N", with ANSI colours). */
async function runSuite(
  file: string,
  label: string,
  env: Record<string, string> = {},
): Promise<Outcome> {
  const { code, output, ms } = await runChild(process.execPath, [file], env, SUITE_TIMEOUT_MS)
  const plain = output.replace(/\x1b\[[0-9;]*m/g, '')
  const total = /Total:\s+(\d+)/.exec(plain)
  const passed = /Passed:\s+(\d+)/.exec(plain)
  const skipped = plain
    .split('\n')
    .filter((line) => line.trimStart().startsWith(SKIP_MARK))
    .map((line) => `${label}: ${line.trimStart().slice(SKIP_MARK.length).trim()}`)
  if (total === null || passed === null) {
    return { label, passed: 0, failed: 1, skipped, output, ms }
  }
  let failed = Number(total[1]) - Number(passed[1])
  if (code !== 0 && failed === 0) failed = 1
  // A skipped case returned early, so uvu counted it as passed.
  const passedCount = Math.max(0, Number(passed[1]) - skipped.length)
  return { label, passed: passedCount, failed, skipped, output, ms }
}

/** A lint tool over the whole tree, counted as one case. */
async function runLint(label: string, command: string, args: string[]): Promise<Outcome> {
  const bin = join(root, 'node_modules', '.bin', command)
  const { code, output, ms } = await runChild(bin, args, {}, LINT_TIMEOUT_MS)
  const ok = code === 0
  return { label, passed: ok ? 1 : 0, failed: ok ? 0 : 1, skipped: [], output, ms }
}

interface Job {
  label: string
  run(): Promise<Outcome[]>
}

let passed = 0
let failed = 0
const skipped: string[] = []

/** Wall times of the jobs that ended in this run, by label. */
const times: Record<string, number> = {}

function report(outcome: Outcome): void {
  console.log(`\n# ${outcome.label} (${(outcome.ms / 1000).toFixed(1)} s)`)
  process.stdout.write(outcome.output)
  passed += outcome.passed
  failed += outcome.failed
  skipped.push(...outcome.skipped)
}

/** Runs the jobs in their order, each as soon as a slot is free. Prints each outcome as it ends. */
async function runJobs(jobs: readonly Job[]): Promise<void> {
  const pending = [...jobs]
  const running = new Set<Promise<void>>()
  const start = (job: Job): void => {
    const startedMs = Date.now()
    const done: Promise<void> = job
      .run()
      .then((outcomes) => outcomes.forEach(report))
      .catch((error: unknown) => {
        report({ label: job.label, passed: 0, failed: 1, skipped: [], output: `${error}\n`, ms: 0 })
      })
      .finally(() => {
        times[job.label] = Date.now() - startedMs
        running.delete(done)
      })
    running.add(done)
  }
  while (pending.length > 0) {
    while (pending.length > 0 && running.size < SLOTS) start(pending.shift() as Job)
    if (pending.length > 0) await Promise.race(running)
  }
  await Promise.all(running)
}

const nameOf = (file: string): string => file.split('/').pop() ?? file

function suitesOf(group: string): string[] {
  const folder = join(here, group)
  if (!existsSync(folder)) return []
  const only = process.env['TEST_ONLY']
  return readdirSync(folder)
    .filter((name) => name.endsWith('.test.js'))
    .filter((name) => only === undefined || name.includes(only))
    .sort()
    .map((name) => join(folder, name))
}

/** Coordinator threads of each node of the S3 suites' cluster. */
const SUITE_COORDINATORS = 2

/** One pass of the S3 suites, one after another, against a cluster the pass starts and ends
 * (through a gateway, each suite runs its smoke cases: test/support/s3-suite.ts). */
function clusterPass(target: 'cluster' | 'gateway', suites: string[]): Job {
  const label = `a 3-node cluster for the S3 suites (TEST_TARGET=${target})`
  return {
    label,
    async run() {
      const gateway = target === 'gateway'
      const startedMs = Date.now()
      let cluster: TestCluster
      try {
        // Two coordinator threads a node (a gateway runs none): every S3 case meets the routing
        // of keys to them.
        const coordinators = { SVC_COORDINATORS: String(SUITE_COORDINATORS) }
        const envOf = { n1: coordinators, n2: coordinators, n3: coordinators }
        cluster = await startCluster({ nodes: 3, gateways: gateway ? 1 : 0, envOf })
      } catch (error) {
        const output = `the cluster did not start: ${String(error)}\n`
        return [{ label, passed: 0, failed: 1, skipped: [], output, ms: Date.now() - startedMs }]
      }
      const facing = cluster.server(gateway ? 'g1' : 'n1')
      const env = {
        TEST_TARGET: target,
        TEST_TARGET_URL: facing.url,
        TEST_TARGET_DATA_DIR: facing.dataDir,
      }
      const outcomes: Outcome[] = []
      try {
        // One after another: each suite uses buckets of its own on the one cluster.
        for (const file of suites) {
          outcomes.push(await runSuite(file, `integration/${nameOf(file)} (${target})`, env))
        }
      } finally {
        await cluster.destroy()
      }
      return outcomes
    },
  }
}

function suiteJob(file: string, group: string): Job {
  const label = `${group}/${nameOf(file)}`
  return { label, run: async () => [await runSuite(file, label)] }
}

function lintJob(label: string, command: string, args: string[]): Job {
  return { label, run: async () => [await runLint(label, command, args)] }
}

/** Each job's wall time in the last run here (a cache beside the build): the longest start first,
 * so that the last to end is a short one. A job never timed yet counts as long. */
const TIMES_FILE = join(here, 'job-times.json')
const lastTimes = readTimes()

function readTimes(): Record<string, number> {
  try {
    return JSON.parse(readFileSync(TIMES_FILE, 'utf8')) as Record<string, number>
  } catch {
    return {}
  }
}

function longestFirst(list: Job[]): Job[] {
  const time = (job: Job): number => lastTimes[job.label] ?? Number.MAX_SAFE_INTEGER
  return [...list].sort((a, b) => time(b) - time(a))
}

const jobs: Job[] = []
const unit = suitesOf('unit').map((file) => suiteJob(file, 'unit'))
if (quick) {
  jobs.push(...longestFirst(unit))
} else {
  const integration = suitesOf('integration')
  const s3 = integration.filter((file) => readFileSync(file, 'utf8').includes('useS3Suite('))
  const targets = (process.env['TEST_TARGETS'] ?? 'cluster,gateway')
    .split(',')
    .filter((target) => target === 'cluster' || target === 'gateway')
  const suites = integration.map((file) => suiteJob(file, 'integration'))
  const passes = s3.length === 0 ? [] : targets.map((target) => clusterPass(target, s3))
  const lint =
    process.env['TEST_ONLY'] === undefined
      ? [
          lintJob('lint: prettier', 'prettier', ['--check', '.']),
          lintJob('lint: eslint', 'eslint', ['.']),
        ]
      : []
  jobs.push(...longestFirst([...passes, ...lint, ...unit, ...suites]))
}
const startedMs = Date.now()
await runJobs(jobs)
writeFileSync(TIMES_FILE, JSON.stringify({ ...lastTimes, ...times }, null, 1))
if (skipped.length > 0) {
  console.log(`\nskipped (cannot run on this machine):`)
  for (const reason of skipped) console.log(`  ${reason}`)
}
const seconds = ((Date.now() - startedMs) / 1000).toFixed(0)
console.log(`\nin ${seconds} s`)
console.log(`${passed} passed, ${failed} failed, ${skipped.length} skipped`)
process.exit(failed === 0 ? 0 : 1)
