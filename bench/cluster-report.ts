/** @module The cluster's closing tables: ops/s and MB/s of each load phase on the single service
 * (from the same run), through node 1 of the 3-node cluster and round-robin over its nodes, with
 * the ratios to the single service and the goals for 1 MiB objects; then failed requests
 * and the node-to-node bytes per PUT. Every process runs on this machine's cores, so the ratios
 * say what the cluster costs, not what it scales to: the tables say so. */
import { availableParallelism } from 'node:os'
import { number, printColumns, ratio } from './columns.js'
import { CLUSTER_ROUTES, type ClusterResults, type ClusterRoute } from './cluster-suite.js'
import type { PhaseResult } from './load.js'
import { PHASE_KINDS, type TargetResults } from './suite.js'

/** The least share of the single service's MB/s each route must keep, by phase label start. */
const GOALS: Record<string, number> = { 'PUT 1 MiB': 0.4, 'GET 1 MiB': 0.7 }

type Figure = (result: PhaseResult) => number

const ROUTE_COLUMNS: Record<ClusterRoute, string> = { n1: '3-node n1', 'round-robin': '3-node rr' }

export function printClusterReport(single: TargetResults | null, cluster: ClusterResults): void {
  console.log(
    `\ncluster: 3 nodes and the load generator share this machine's ${availableParallelism()} ` +
      'cores,\nso these figures measure the overhead of cluster mode, not scale-out.',
  )
  printRates('cluster ops/s', (r) => r.ops / r.seconds, single, cluster, false)
  printRates('cluster MB/s', (r) => r.bytes / 1e6 / r.seconds, single, cluster, true)
  const failed = PHASE_KINDS.map((kind) => [
    kind.label,
    ...CLUSTER_ROUTES.map((route) => {
      const phase = cluster.get(route)?.phases.get(kind.label)
      return number(phase === undefined ? null : phase.failed)
    }),
  ])
  printColumns('cluster failed requests', ['', ...routeColumns()], failed)
  const bytes = PHASE_KINDS.filter((kind) => kind.method === 'PUT').map((kind) => [
    kind.label,
    ...CLUSTER_ROUTES.map((route) => {
      const perPut = cluster.get(route)?.sentBytesPerPut.get(kind.label)
      return perPut === undefined || perPut === null ? '-' : perPut.toFixed(0)
    }),
  ])
  printColumns(
    'node-to-node bytes per PUT (sent by all nodes, gossip included, / PUTs acknowledged)',
    ['', ...routeColumns()],
    bytes,
  )
}

function routeColumns(): string[] {
  return CLUSTER_ROUTES.map((route) => ROUTE_COLUMNS[route])
}

function printRates(
  title: string,
  figure: Figure,
  single: TargetResults | null,
  cluster: ClusterResults,
  withGoals: boolean,
): void {
  const valueOf = (phase: PhaseResult | undefined): number | null =>
    phase === undefined || phase.ops === 0 ? null : figure(phase)
  const lines = PHASE_KINDS.map((kind) => {
    const reference = valueOf(single?.phases.get(kind.label))
    const values = CLUSTER_ROUTES.map((route) =>
      valueOf(cluster.get(route)?.phases.get(kind.label)),
    )
    const goal = withGoals ? GOALS[kind.label.slice(0, 'PUT 1 MiB'.length)] : undefined
    return [
      kind.label,
      number(reference),
      ...values.map((value) => number(value)),
      ...values.map((value) => ratio(value, reference)),
      goal === undefined ? '' : `>= ${goal}x single`,
      goal === undefined ? '' : verdict(goal, reference, values),
    ]
  })
  const ratios = CLUSTER_ROUTES.map((route) => `${route === 'n1' ? 'n1' : 'rr'}/single`)
  const header = ['', 'single', ...routeColumns(), ...ratios]
  printColumns(title, withGoals ? [...header, 'goal', 'met'] : header, lines)
}

/** Met when every route keeps the share of the single service. */
function verdict(goal: number, reference: number | null, values: readonly (number | null)[]) {
  if (reference === null || reference === 0 || values.some((value) => value === null)) return 'n/a'
  return values.every((value) => (value ?? 0) / reference >= goal) ? 'met' : 'NOT MET'
}
