/** @module Test runner: runs every compiled uvu suite (unit first, then integration), each in its
 * own child process, two at a time (integration suites that start clusters, bound timings or load
 * the machine alone, first), so a suite that starts servers or threads cannot leak into another,
 * then
 * the S3 suites (those built on test/support/s3-suite.ts) again against a 3-node cluster, through
 * a node and through a gateway (TEST_TARGET; one cluster per pass), and prints the closing line
 * `N passed, N failed`. A suite that exits non-zero without a uvu summary counts as one failure.
 * Each suite has a time limit; a suite past it is killed and counted as failed. TEST_ONLY narrows
 * the run to suites whose file name contains it; TEST_TARGETS (default `cluster,gateway`, `none`
 * for none) names the cluster passes. */
import { spawn } from 'node:child_process'
import { readdirSync, existsSync, readFileSync } from 'node:fs'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startCluster, type TestCluster } from './support/cluster.js'

const here = dirname(fileURLToPath(import.meta.url))
const SUITE_TIMEOUT_MS = 10 * 60 * 1000
/** Suites run two at a time (the machine's cores), but for those that must run alone. */
const SUITES_AT_ONCE = 2

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

interface Outcome {
  passed: number
  failed: number
  output: string
}

/** Runs one suite; its output is held in the outcome. */
function runSuite(file: string, env: Record<string, string>): Promise<Outcome> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [file], {
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
      output += `\nsuite timed out after ${SUITE_TIMEOUT_MS} ms\n`
      child.kill('SIGKILL')
    }, SUITE_TIMEOUT_MS)
    child.on('close', (code) => {
      clearTimeout(timer)
      // uvu prints "Total: N", "Passed: N", "Skipped: N" (with ANSI colours) at the end.
      const plain = output.replace(/\x1b\[[0-9;]*m/g, '')
      const total = /Total:\s+(\d+)/.exec(plain)
      const passed = /Passed:\s+(\d+)/.exec(plain)
      if (total === null || passed === null) {
        resolve({ passed: 0, failed: 1, output })
        return
      }
      const passedCount = Number(passed[1])
      let failedCount = Number(total[1]) - passedCount
      if (code !== 0 && failedCount === 0) failedCount = 1
      resolve({ passed: passedCount, failed: failedCount, output })
    })
  })
}

let passed = 0
let failed = 0

/** Runs `files` `lanes` at a time, each suite's output printed whole when it ends, in the order
 * of `files`, and adds up their outcomes. */
async function runSuites(
  files: readonly string[],
  lanes: number,
  label: (file: string) => string,
  env: Record<string, string> = {},
): Promise<void> {
  const settle: ((outcome: Outcome) => void)[] = []
  const outcomes = files.map((): Promise<Outcome> => new Promise((resolve) => settle.push(resolve)))
  let next = 0
  const lane = async (): Promise<void> => {
    for (let index = next++; index < files.length; index = next++) {
      settle[index]?.(await runSuite(files[index] as string, env))
    }
  }
  const running = Array.from({ length: lanes }, lane)
  for (const [index, file] of files.entries()) {
    const outcome = await (outcomes[index] as Promise<Outcome>)
    console.log(`\n# ${label(file)}`)
    process.stdout.write(outcome.output)
    passed += outcome.passed
    failed += outcome.failed
  }
  await Promise.all(running)
}

const nameOf = (file: string): string => file.split('/').pop() ?? file
/** Integration suites that run with no other suite beside them: those that start clusters or
 * several nodes, bound how fast something must happen (an answer within a bound of a kill), fill
 * a volume, or move a GiB. The others start one server each and run two at a time. */
const ALONE = ['actor-death', 'chaos', 'full-disk', 'large-object', 'local-cluster']
function runsAlone(file: string): boolean {
  return (
    ALONE.some((name) => nameOf(file).startsWith(`${name}.`)) ||
    readFileSync(file, 'utf8').includes('startCluster(')
  )
}

// Unit suites start no servers and share nothing.
await runSuites(suitesOf('unit'), SUITES_AT_ONCE, (file) => `unit/${nameOf(file)}`)
const integration = suitesOf('integration')
const integrationLabel = (file: string): string => `integration/${nameOf(file)}`
await runSuites(integration.filter(runsAlone), 1, integrationLabel)
await runSuites(
  integration.filter((file) => !runsAlone(file)),
  SUITES_AT_ONCE,
  integrationLabel,
)
/** Suites that run against whatever TEST_TARGET names (they share test/support/s3-suite.ts). */
function s3Suites(): string[] {
  return suitesOf('integration').filter((file) =>
    readFileSync(file, 'utf8').includes('useS3Suite('),
  )
}

const targets = (process.env['TEST_TARGETS'] ?? 'cluster,gateway')
  .split(',')
  .filter((target) => target !== '' && target !== 'none')
const s3 = s3Suites()
for (const target of s3.length === 0 ? [] : targets) {
  // One cluster for the whole pass: each suite uses buckets of its own, and a cluster start
  // costs about as much as a suite's tests.
  console.log(`\n# a 3-node cluster for the S3 suites (TEST_TARGET=${target})`)
  const gateway = target === 'gateway'
  let cluster: TestCluster
  try {
    cluster = await startCluster({ nodes: 3, gateways: gateway ? 1 : 0 })
  } catch (error) {
    console.log(`the cluster did not start: ${String(error)}`)
    failed += 1
    continue
  }
  const facing = cluster.server(gateway ? 'g1' : 'n1')
  const env = {
    TEST_TARGET: target,
    TEST_TARGET_URL: facing.url,
    TEST_TARGET_DATA_DIR: facing.dataDir,
  }
  try {
    await runSuites(s3, 1, (file) => `${integrationLabel(file)} (TEST_TARGET=${target})`, env)
  } finally {
    await cluster.destroy()
  }
}
console.log(`\n${passed} passed, ${failed} failed`)
process.exit(failed === 0 ? 0 : 1)
