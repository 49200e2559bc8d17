/** @module The figures of a load phase, as the closing tables show them: each computed per run,
 * then the median over the phase's runs (BENCH_RUNS). A figure a run did not measure (no
 * answers) is left out of the median; with none left the figure is null, printed as "-". */
import type { LoadResult } from './wrk.js'

/** A figure of one run; null when the run did not measure it. */
export type Figure = (result: LoadResult) => number | null

const measured =
  (figure: (result: LoadResult) => number): Figure =>
  (result) =>
    result.ops === 0 ? null : figure(result)

export const opsPerSecond: Figure = measured((r) => r.ops / r.seconds)
export const megabytesPerSecond: Figure = measured((r) => r.bytes / 1e6 / r.seconds)
export const p50Ms: Figure = measured((r) => r.p50Ms)
export const p99Ms: Figure = measured((r) => r.p99Ms)
export const failedRequests: Figure = (r) => r.failed
/** The server's CPU (all its processes, every node) per answer, in microseconds. */
export const cpuPerRequestUs: Figure = measured((r) => r.cpu.us / r.answers)

/** The CPU per answer of node `at`'s processes, in microseconds. */
export function nodeCpuPerRequestUs(at: number): Figure {
  return measured((r) => (r.cpu.byNode[at] ?? 0) / r.answers)
}

/** The CPU per answer of the threads of these names, in microseconds. */
export function threadsCpuPerRequestUs(names: readonly string[]): Figure {
  return measured(
    (r) => names.reduce((sum, name) => sum + (r.cpu.byThread.get(name) ?? 0), 0) / r.answers,
  )
}

export function medianOf(runs: readonly LoadResult[] | undefined, figure: Figure): number | null {
  return median((runs ?? []).map(figure))
}

/** The middle value, or the mean of the two middle ones; nulls and NaNs are left out. */
export function median(values: readonly (number | null)[]): number | null {
  const sorted = values
    .filter((value): value is number => value !== null && !Number.isNaN(value))
    .sort((a, b) => a - b)
  if (sorted.length === 0) return null
  const middle = Math.floor(sorted.length / 2)
  const upper = sorted[middle] ?? Number.NaN
  return sorted.length % 2 === 1 ? upper : ((sorted[middle - 1] ?? Number.NaN) + upper) / 2
}
