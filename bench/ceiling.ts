/** @module A node's ceiling in a load phase: the rate it reaches once ingress threads are added on
 * more cores, 1 over the CPU per request of its busiest shared thread (thread-kinds.ts), since a
 * thread runs on one core at most; with the node's CPU per request, both as ratios to the floor's
 * (floor-main.ts, the bare Node.js server that hashes as S3 must) in the same phase of the same
 * run, and the goals on those ratios. Per run, then the median over the phase's runs, as
 * every figure (figures.ts). */
import { cpuPerRequestUs, medianOf } from './figures.js'
import { threadKind } from './thread-kinds.js'
import type { LoadResult } from './wrk.js'

/** The most each ratio to the floor may be: 16 connections, PUTs of new keys, distinct bodies. */
export interface CeilingGoal {
  busiestShared: number
  node: number
}

export const CEILING_GOALS: Readonly<Record<string, CeilingGoal>> = {
  'GET 4 KiB c16': { busiestShared: 0.5, node: 2.5 },
  'PUT 4 KiB c16': { busiestShared: 1.0, node: 4 },
  'GET 1 MiB c16': { busiestShared: 0.15, node: 1.6 },
  'PUT 1 MiB c16': { busiestShared: 0.1, node: 1.3 },
}

export interface BusiestThread {
  name: string
  usPerRequest: number
}

/** The shared thread that took the most CPU per answer (`byThread` in µs); null when no shared
 * thread ran or nothing was answered. */
export function busiestShared(
  byThread: ReadonlyMap<string, number>,
  answers: number,
): BusiestThread | null {
  if (answers <= 0) return null
  let busiest: BusiestThread | null = null
  for (const [name, us] of byThread) {
    if (threadKind(name) !== 'shared') continue
    if (busiest === null || us / answers > busiest.usPerRequest) {
      busiest = { name, usPerRequest: us / answers }
    }
  }
  return busiest
}

/** Requests per second one core gives a thread taking this much CPU per request. */
export function requestsPerSecond(usPerRequest: number | null): number | null {
  return usPerRequest === null || usPerRequest <= 0 ? null : 1e6 / usPerRequest
}

export interface Ceiling {
  /** The busiest shared thread's name in the run with the most of it; null when not measured. */
  thread: string | null
  busiestSharedUs: number | null
  requestsPerSecond: number | null
  nodeUs: number | null
  floorUs: number | null
  busiestSharedToFloor: number | null
  nodeToFloor: number | null
}

const busiestOfRun = (run: LoadResult): BusiestThread | null =>
  run.ops === 0 ? null : busiestShared(run.cpu.byThread, run.answers)

/** The ceiling of one phase from the service's runs and the floor's runs of that phase. */
export function ceilingOf(
  runs: readonly LoadResult[] | undefined,
  floorRuns: readonly LoadResult[] | undefined,
): Ceiling {
  const busiestSharedUs = medianOf(runs, (run) => busiestOfRun(run)?.usPerRequest ?? null)
  const nodeUs = medianOf(runs, cpuPerRequestUs)
  const floorUs = medianOf(floorRuns, cpuPerRequestUs)
  const names = (runs ?? []).map(busiestOfRun).filter((busiest) => busiest !== null)
  const thread = names.sort((a, b) => b.usPerRequest - a.usPerRequest)[0]?.name ?? null
  return {
    thread,
    busiestSharedUs,
    requestsPerSecond: requestsPerSecond(busiestSharedUs),
    nodeUs,
    floorUs,
    busiestSharedToFloor: ratioOf(busiestSharedUs, floorUs),
    nodeToFloor: ratioOf(nodeUs, floorUs),
  }
}

/** Whether a ratio is within its goal's bound; null when it was not measured. */
export function withinGoal(ratio: number | null, max: number): boolean | null {
  return ratio === null ? null : ratio <= max
}

function ratioOf(value: number | null, reference: number | null): number | null {
  return value === null || reference === null || reference <= 0 ? null : value / reference
}
