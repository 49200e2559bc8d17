/** @module Server CPU as the kernel counts it: utime + stime (fields 14 and 15) of
 * /proc/<pid>/stat for each process of each node, and of /proc/<pid>/task/<tid>/stat for each of
 * its threads, read right before and right after a load phase. The process's own figure holds the
 * threads that exited meanwhile too, so the total is the processes'; the threads give the split by
 * thread name (the `comm` in the stat line: the service's actor threads carry their actor's name,
 * V8's GC threads are V8Worker, libuv's pool libuv-worker). Only Linux has /proc: elsewhere every
 * figure reads 0. */
import { readdirSync, readFileSync } from 'node:fs'

/** USER_HZ, the unit of the stat times: 100 on every Linux the bench runs on. */
const CLOCK_TICKS_PER_SECOND = 100
export const US_PER_TICK = 1e6 / CLOCK_TICKS_PER_SECOND
/** A process has a few dozen threads; a scan reads this many at most. */
const THREADS_MAX = 10_000

interface Ticks {
  name: string
  ticks: number
}

interface ProcessSample {
  node: number
  ticks: number
  /** By thread id. */
  threads: Map<string, Ticks>
}

/** By pid: every process of every node at one moment. */
export type CpuSample = Map<number, ProcessSample>

/** CPU time spent between two samples, in microseconds. */
export interface CpuUse {
  us: number
  /** Per node, in the order of the nodes sampled. */
  byNode: number[]
  /** Per thread name, summed over the threads and nodes that carry it. */
  byThread: Map<string, number>
}

/** `nodes[i]` is node i's pids (a single server has one node). */
export function sampleCpu(nodes: readonly (readonly number[])[]): CpuSample {
  const sample: CpuSample = new Map()
  for (const [node, pids] of nodes.entries()) {
    for (const pid of pids) {
      const own = statTicks(`/proc/${pid}/stat`)
      if (own === null) continue // Gone: it holds nothing now.
      sample.set(pid, { node, ticks: own.ticks, threads: threadTicks(pid) })
    }
  }
  return sample
}

export function cpuBetween(before: CpuSample, after: CpuSample, nodeCount: number): CpuUse {
  const byNode = Array.from({ length: nodeCount }, () => 0)
  const byThread = new Map<string, number>()
  let us = 0
  for (const [pid, now] of after) {
    const then = before.get(pid) // A process started meanwhile spent all of its time in it.
    const spent = (now.ticks - (then?.ticks ?? 0)) * US_PER_TICK
    us += spent
    byNode[now.node] = (byNode[now.node] ?? 0) + spent
    for (const [tid, thread] of now.threads) {
      const threadSpent = (thread.ticks - (then?.threads.get(tid)?.ticks ?? 0)) * US_PER_TICK
      byThread.set(thread.name, (byThread.get(thread.name) ?? 0) + threadSpent)
    }
  }
  return { us, byNode, byThread }
}

function threadTicks(pid: number): Map<string, Ticks> {
  const threads = new Map<string, Ticks>()
  let tids: string[] = []
  try {
    tids = readdirSync(`/proc/${pid}/task`).slice(0, THREADS_MAX)
  } catch {
    return threads
  }
  for (const tid of tids) {
    const ticks = statTicks(`/proc/${pid}/task/${tid}/stat`)
    if (ticks !== null) threads.set(tid, ticks)
  }
  return threads
}

/** The name and utime + stime of a stat file; null when it is gone. */
function statTicks(path: string): Ticks | null {
  const stat = readStat(path)
  if (stat === null) return null
  // Field 3 (state) is fields[0]: utime (14) and stime (15) are fields[11] and fields[12].
  const ticks = Number(stat.fields[11]) + Number(stat.fields[12])
  return Number.isFinite(ticks) ? { name: stat.name, ticks } : null
}

/** A /proc stat line: the name (`comm`) and the fields after it, from field 3 (state) on; null
 * when the file is gone. */
export function readStat(path: string): { name: string; fields: string[] } | null {
  let stat: string
  try {
    stat = readFileSync(path, 'utf8')
  } catch {
    return null
  }
  // The name is in parentheses and may hold spaces or ')': fields start after the last ')'.
  const close = stat.lastIndexOf(')')
  return {
    name: stat.slice(stat.indexOf('(') + 1, close),
    fields: stat.slice(close + 2).split(' '),
  }
}
