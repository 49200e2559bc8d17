/** @module The closing tables: one per figure, a column per target, the ratios of the service
 * (one ingress thread) to nginx, to s3rver and to the floor (a Node.js server that hashes and
 * stores nothing), and the service's goal with whether this run met it; then each service target's
 * CPU per request split by thread name, and the node's ceiling (ceiling-report.ts). A load phase's
 * figure is the median of its runs. It prints and judges nothing else: the bench never fails on a
 * figure. MB is 10^6 bytes throughout. */
import { LIST_KEYS, PHASE_RUNS } from './config.js'
import { percentile } from './load.js'
import { BIG_STEP, LIST_STEP, phaseNamed, SELECTED_KINDS, type TargetResults } from './suite.js'
import { printClusterReport } from './cluster-report.js'
import type { ClusterResults } from './cluster-suite.js'
import { printCeilingReport } from './ceiling-report.js'
import { number, printColumns, ratio, verdictText, type Print } from './columns.js'
import { cpuPerRequestUs, failedRequests, megabytesPerSecond, medianOf } from './figures.js'
import { opsPerSecond, p50Ms, p99Ms, threadsCpuPerRequestUs, type Figure } from './figures.js'
import { SERVER_NAMES, SERVICE_NAMES, type ServerName, type TargetName } from './targets.js'

export type AllResults = Map<ServerName, TargetResults>

/** Either a ratio of the service to a reference, or an absolute ceiling on the service's value. */
type Goal = { against: 'nginx' | 's3rver'; ratioMin: number } | { below: number }

interface Row {
  label: string
  values: Record<ServerName, number | null>
  goal?: Goal
}

/** The service's goal on the row of this phase label, if any. */
type GoalOf = (label: string) => Goal | undefined

/** Goals by the start of the label: every concurrency, and overwrites too. */
const byStart =
  (goals: Record<string, Goal>): GoalOf =>
  (label) =>
    goals[label.slice(0, 'PUT 4 KiB'.length)]

/** Server CPU per request, at 16 connections, PUTs of new keys. */
const CPU_GOALS: Record<string, Goal> = {
  'GET 4 KiB c16': { below: 110 },
  'PUT 4 KiB c16': { below: 300 },
  'GET 1 MiB c16': { below: 1200 },
  'PUT 1 MiB c16': { below: 4500 },
}

const FIGURES: readonly { title: string; figure: Figure; goalOf: GoalOf }[] = [
  {
    title: 'ops/s',
    figure: opsPerSecond,
    goalOf: byStart({
      'PUT 4 KiB': { against: 's3rver', ratioMin: 3 },
      'GET 4 KiB': { against: 's3rver', ratioMin: 5 },
    }),
  },
  {
    title: 'MB/s',
    figure: megabytesPerSecond,
    goalOf: byStart({
      'PUT 1 MiB': { against: 'nginx', ratioMin: 0.5 },
      'GET 1 MiB': { against: 'nginx', ratioMin: 0.5 },
    }),
  },
  { title: 'p50 latency, ms', figure: p50Ms, goalOf: () => undefined },
  { title: 'p99 latency, ms', figure: p99Ms, goalOf: () => undefined },
  { title: 'failed requests', figure: failedRequests, goalOf: () => undefined },
  {
    title: 'server CPU per request, us (all its processes, from /proc)',
    figure: cpuPerRequestUs,
    goalOf: (label) => CPU_GOALS[label],
  },
]

/** Columns of the service's split by thread: the names that take most, the rest summed. */
const THREAD_COLUMNS = 8

export function printReport(
  print: Print,
  results: AllResults,
  cluster: ClusterResults | null,
  skipped: Map<TargetName, string>,
): void {
  const runs = PHASE_RUNS === 1 ? '' : `; load phases: median of ${PHASE_RUNS} runs`
  print(`\n=== Results (MB = 10^6 bytes; "-" = not measured${runs}) ===`)
  for (const [name, reason] of skipped) print(`${name}: skipped: ${reason}`)
  if (results.size === 0 && cluster === null) {
    print('nothing was measured')
    return
  }
  for (const { title, figure, goalOf } of FIGURES) {
    const rows = SELECTED_KINDS.map((kind) => {
      const row: Row = {
        label: kind.label,
        values: valuesOf(results, (r) => medianOf(r.phases.get(kind.label), figure)),
      }
      const goal = goalOf(kind.label)
      if (goal !== undefined) row.goal = goal
      return row
    })
    printTable(print, title, rows)
  }
  for (const name of SERVICE_NAMES) {
    const service = results.get(name)
    if (service !== undefined) printThreads(print, name, service)
  }
  printCeilingReport(print, results)
  if (phaseNamed(BIG_STEP)) printTable(print, `${BIG_STEP} object`, bigRows(results))
  if (phaseNamed(LIST_STEP)) {
    printTable(print, `ListObjectsV2, ${LIST_KEYS} keys, pages of 1000`, listRows(results))
  }
  if (cluster !== null) printClusterReport(print, results.get('service') ?? null, cluster)
  printErrors(print, results)
}

function bigRows(results: AllResults): Row[] {
  const rate = (t: { bytes: number; seconds: number; error: string | null }): number | null =>
    t.error === null ? t.bytes / 1e6 / t.seconds : null
  const rss = (t: { rssPeakBytes: number }): number | null =>
    t.rssPeakBytes > 0 ? t.rssPeakBytes / 1e6 : null
  const big = (pick: (b: NonNullable<TargetResults['big']>) => number | null) =>
    valuesOf(results, (r) => (r.big === null ? null : pick(r.big)))
  return [
    {
      label: 'upload MB/s',
      values: big((b) => rate(b.upload)),
      goal: { against: 'nginx', ratioMin: 0.5 },
    },
    { label: 'download MB/s', values: big((b) => rate(b.download)) },
    { label: 'peak RSS upload, MB', values: big((b) => rss(b.upload)), goal: { below: 200 } },
    { label: 'peak RSS download, MB', values: big((b) => rss(b.download)), goal: { below: 200 } },
  ]
}

function listRows(results: AllResults): Row[] {
  const list = (pick: (l: NonNullable<TargetResults['list']>) => number | null) =>
    valuesOf(results, (r) => (r.list === null ? null : pick(r.list)))
  const nonEmpty = (values: Float64Array, fraction: number): number | null =>
    values.length === 0 ? null : percentile(values, fraction)
  return [
    { label: 'fill PUT ops/s (c64)', values: list((l) => l.fill.ops / l.fill.seconds) },
    { label: 'keys filled', values: list((l) => l.fill.ops) },
    { label: 'pages listed', values: list((l) => l.pages) },
    { label: 'keys listed', values: list((l) => l.keysListed) },
    { label: 'listing complete (1 = yes)', values: list((l) => (l.complete ? 1 : 0)) },
    { label: 'p50 ms per page', values: list((l) => nonEmpty(l.latenciesMs, 0.5)) },
    {
      label: 'p99 ms per page',
      values: list((l) => nonEmpty(l.latenciesMs, 0.99)),
      goal: { below: 25 },
    },
  ]
}

function valuesOf(
  results: AllResults,
  pick: (result: TargetResults) => number | null,
): Record<ServerName, number | null> {
  const values: Record<ServerName, number | null> = {
    service: null,
    'service-2w': null,
    s3rver: null,
    nginx: null,
    floor: null,
  }
  for (const name of SERVER_NAMES) {
    const result = results.get(name)
    const value = result === undefined ? null : pick(result)
    values[name] = value === null || Number.isNaN(value) ? null : value
  }
  return values
}

function printTable(print: Print, title: string, rows: readonly Row[]): void {
  const columns = ['s3rver', 'nginx', 'floor', 'svc/nginx', 'svc/s3rver', 'svc/floor']
  const header = ['', 'service', ...columns, 'goal', 'met']
  const lines = rows.map((row) => {
    const { service, s3rver, nginx, floor } = row.values
    return [
      row.label,
      number(service),
      number(s3rver),
      number(nginx),
      number(floor),
      ratio(service, nginx),
      ratio(service, s3rver),
      ratio(service, floor),
      row.goal === undefined ? '' : goalText(row.goal),
      row.goal === undefined ? '' : verdict(row.goal, row.values),
    ]
  })
  printColumns(print, title, header, lines)
}

function goalText(goal: Goal): string {
  return 'below' in goal ? `< ${goal.below}` : `>= ${goal.ratioMin}x ${goal.against}`
}

function verdict(goal: Goal, values: Record<ServerName, number | null>): string {
  const service = values.service
  if (service === null) return 'n/a'
  if ('below' in goal) return verdictText(service < goal.below)
  const reference = values[goal.against]
  if (reference === null || reference === 0) return 'n/a'
  return verdictText(service / reference >= goal.ratioMin)
}

/** A service target's CPU per request by thread name: the names that take most over all phases
 * get a column each. */
function printThreads(print: Print, target: ServerName, service: TargetResults): void {
  const totals = new Map<string, number>()
  for (const kind of SELECTED_KINDS) {
    for (const run of service.phases.get(kind.label) ?? []) {
      for (const [name, us] of run.cpu.byThread) {
        if (run.answers > 0) totals.set(name, (totals.get(name) ?? 0) + us / run.answers)
      }
    }
  }
  const names = [...totals].sort((a, b) => b[1] - a[1]).map(([name]) => name)
  const shown = names.slice(0, THREAD_COLUMNS)
  const rest = names.slice(THREAD_COLUMNS)
  const columns = [...shown.map((name) => [name]), ...(rest.length === 0 ? [] : [rest])]
  const lines = SELECTED_KINDS.map((kind) => {
    const runs = service.phases.get(kind.label)
    return [
      kind.label,
      ...columns.map((names) => number(medianOf(runs, threadsCpuPerRequestUs(names)))),
    ]
  })
  const header = ['', ...shown, ...(rest.length === 0 ? [] : ['other'])]
  printColumns(print, `${target} CPU per request by thread, us`, header, lines)
}

function printErrors(print: Print, results: AllResults): void {
  for (const [name, result] of results) {
    for (const [label, runs] of result.phases) {
      for (const [at, run] of runs.entries()) {
        if (run.firstError === null) continue
        const which = runs.length === 1 ? '' : ` (run ${at + 1})`
        print(`${name} ${label}${which}: first error: ${run.firstError}`)
      }
    }
    for (const transfer of result.big === null ? [] : [result.big.upload, result.big.download]) {
      if (transfer.error !== null) print(`${name} streamed: ${transfer.error}`)
    }
    if (result.list?.error != null) print(`${name} list: ${result.list.error}`)
    if (result.list?.fill.firstError != null) {
      print(`${name} list fill: first error: ${result.list.fill.firstError}`)
    }
  }
}
