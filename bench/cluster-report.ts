/** @module The cluster's closing tables: ops/s and MB/s of each load phase on the single service
 * (from the same run), through node 1 of the 3-node cluster and round-robin over its nodes, with
 * the ratios to the single service and the issue's goals for 1 MiB objects; the server CPU per
 * request (the three nodes' processes summed, then per node); then failed requests and the
 * node-to-node bytes per PUT. A load phase's figure is the median of its runs. Every process runs
 * on this machine's cores, so the ratios say what the cluster costs, not what it scales to: the
 * tables say so. */
import { availableParallelism } from 'node:os'
import { NODE_COUNT } from '../dev/cluster-plan.js'
import { number, printColumns, ratio, type Print } from './columns.js'
import { CLUSTER_ROUTES, type ClusterResults, type ClusterRoute } from './cluster-suite.js'
import { cpuPerRequestUs, failedRequests, median, medianOf, megabytesPerSecond } from './figures.js'
import { nodeCpuPerRequestUs, opsPerSecond, type Figure } from './figures.js'
import { SELECTED_KINDS, type TargetResults } from './suite.js'

/** The least share of the single service's MB/s each route must keep, by phase label start. */
const GOALS: Record<string, number> = { 'PUT 1 MiB': 0.4, 'GET 1 MiB': 0.7 }

const ROUTE_COLUMNS: Record<ClusterRoute, string> = { n1: '3-node n1', 'round-robin': '3-node rr' }
const ROUTE_SHORT: Record<ClusterRoute, string> = { n1: 'n1', 'round-robin': 'rr' }

export function printClusterReport(
  print: Print,
  single: TargetResults | null,
  cluster: ClusterResults,
): void {
  print(
    `\ncluster: ${NODE_COUNT} nodes and the load generator share this machine's ` +
      `${availableParallelism()} cores,\nso these figures measure the overhead of cluster mode, ` +
      'not scale-out.',
  )
  printRates(print, 'cluster ops/s', opsPerSecond, single, cluster, false)
  printRates(print, 'cluster MB/s', megabytesPerSecond, single, cluster, true)
  const cpuTitle = `cluster server CPU per request, us (${NODE_COUNT} nodes' processes summed)`
  printRates(print, cpuTitle, cpuPerRequestUs, single, cluster, false)
  const byNode = SELECTED_KINDS.map((kind) => [
    kind.label,
    ...CLUSTER_ROUTES.flatMap((route) =>
      Array.from({ length: NODE_COUNT }, (_, at) =>
        number(medianOf(cluster.get(route)?.phases.get(kind.label), nodeCpuPerRequestUs(at))),
      ),
    ),
  ])
  const nodeColumns = CLUSTER_ROUTES.flatMap((route) =>
    Array.from({ length: NODE_COUNT }, (_, at) => `${ROUTE_SHORT[route]}: node ${at + 1}`),
  )
  printColumns(print, 'cluster server CPU per request by node, us', ['', ...nodeColumns], byNode)
  const failed = SELECTED_KINDS.map((kind) => [
    kind.label,
    ...CLUSTER_ROUTES.map((route) =>
      number(medianOf(cluster.get(route)?.phases.get(kind.label), failedRequests)),
    ),
  ])
  printColumns(print, 'cluster failed requests', ['', ...routeColumns()], failed)
  const bytes = SELECTED_KINDS.filter((kind) => kind.method === 'PUT').map((kind) => [
    kind.label,
    ...CLUSTER_ROUTES.map((route) => {
      const perPut = median(cluster.get(route)?.sentBytesPerPut.get(kind.label) ?? [])
      return perPut === null ? '-' : perPut.toFixed(0)
    }),
  ])
  printColumns(
    print,
    'node-to-node bytes per PUT (sent by all nodes, gossip included, / PUTs acknowledged)',
    ['', ...routeColumns()],
    bytes,
  )
}

function routeColumns(): string[] {
  return CLUSTER_ROUTES.map((route) => ROUTE_COLUMNS[route])
}

function printRates(
  print: Print,
  title: string,
  figure: Figure,
  single: TargetResults | null,
  cluster: ClusterResults,
  withGoals: boolean,
): void {
  const lines = SELECTED_KINDS.map((kind) => {
    const reference = medianOf(single?.phases.get(kind.label), figure)
    const values = CLUSTER_ROUTES.map((route) =>
      medianOf(cluster.get(route)?.phases.get(kind.label), figure),
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
  const ratios = CLUSTER_ROUTES.map((route) => `${ROUTE_SHORT[route]}/single`)
  const header = ['', 'single', ...routeColumns(), ...ratios]
  printColumns(print, title, withGoals ? [...header, 'goal', 'met'] : header, lines)
}

/** Met when every route keeps the share of the single service. */
function verdict(goal: number, reference: number | null, values: readonly (number | null)[]) {
  if (reference === null || reference === 0 || values.some((value) => value === null)) return 'n/a'
  return values.every((value) => (value ?? 0) / reference >= goal) ? 'met' : 'NOT MET'
}
