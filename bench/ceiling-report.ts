/** @module The node's ceiling table (ceiling.ts): per load phase and service target, the busiest
 * shared thread and its CPU per request, the rate that sets (1e6 / that), the node's CPU per
 * request, both as ratios to the floor's of the same phase, and the goals on those ratios. */
import { CEILING_GOALS, ceilingOf, withinGoal } from './ceiling.js'
import { number, printColumns, ratio, verdictText, type Print } from './columns.js'
import type { AllResults } from './report.js'
import { SELECTED_KINDS } from './suite.js'
import { SERVICE_ENV, SERVICE_NAMES } from './targets.js'

export function printCeilingReport(print: Print, results: AllResults): void {
  const services = SERVICE_NAMES.filter((name) => results.has(name))
  if (services.length === 0) return
  const floor = results.get('floor')
  const lines = SELECTED_KINDS.flatMap((kind) =>
    services.map((name) => {
      const ceiling = ceilingOf(
        results.get(name)?.phases.get(kind.label),
        floor?.phases.get(kind.label),
      )
      const goal = CEILING_GOALS[kind.label]
      const judged = (value: number | null, max: number | undefined): string[] =>
        max === undefined ? ['', ''] : [`<= ${max}x`, verdictText(withinGoal(value, max))]
      return [
        `${kind.label} ${name}`,
        ceiling.thread ?? '-',
        number(ceiling.busiestSharedUs),
        number(ceiling.requestsPerSecond),
        number(ceiling.nodeUs),
        number(ceiling.floorUs),
        ratio(ceiling.busiestSharedUs, ceiling.floorUs),
        ...judged(ceiling.busiestSharedToFloor, goal?.busiestShared),
        ratio(ceiling.nodeUs, ceiling.floorUs),
        ...judged(ceiling.nodeToFloor, goal?.node),
      ]
    }),
  )
  const settings = services.map((name) => `${name}: ${envText(SERVICE_ENV[name])}`).join('; ')
  const header = ['', 'busiest shared', 'us', 'ceiling/s', 'node us', 'floor us']
  printColumns(
    print,
    `node ceiling (${settings})\n` +
      'busiest shared: the busiest thread that is neither ingress nor a pool that grows with ' +
      'cores\n(V8Worker, libuv-worker, rocksdb:*, the shards of a store of several: ' +
      'replica-store-N, kv-writer-N);\nits CPU per request, us; ceiling/s: the requests/s it ' +
      'allows (1e6 / us); node us: all CPU per\nrequest; both / the floor CPU per request',
    [...header, 'shared/floor', 'goal', 'met', 'node/floor', 'goal', 'met'],
    lines,
  )
}

function envText(env: Readonly<Record<string, string>>): string {
  return Object.entries(env)
    .map(([name, value]) => `${name}=${value}`)
    .join(' ')
}
