/** @module Server memory as the kernel sees it: VmRSS from /proc/<pid>/status, summed over a
 * process and its descendants (nginx's master and workers), sampled on a timer while a transfer
 * runs, keeping the peak. Only Linux has /proc: elsewhere the figures read 0. */
import assert from 'node:assert/strict'
import { readFileSync, readdirSync } from 'node:fs'
import { readStat } from './cpu.js'

/** A process table scan reads this many entries at most (a busy machine has a few hundred). */
const PROCESSES_MAX = 100_000

/** The process and all its descendants, found by the parent field of /proc/<pid>/stat. */
export function processTree(root: number): number[] {
  assert(Number.isInteger(root) && root > 0)
  const parentOf = new Map<number, number>()
  let entries: string[] = []
  try {
    entries = readdirSync('/proc').slice(0, PROCESSES_MAX)
  } catch {
    return [root]
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue
    const parent = parentPid(Number(entry))
    if (parent !== null) parentOf.set(Number(entry), parent)
  }
  const tree = [root]
  // Breadth-first over the tree; each pid joins once, so this ends within the table's size.
  for (let i = 0; i < tree.length && i < PROCESSES_MAX; i++) {
    for (const [pid, parent] of parentOf) if (parent === tree[i]) tree.push(pid)
  }
  return tree
}

function parentPid(pid: number): number | null {
  // Field 4 (ppid) follows field 3 (state).
  const parent = Number(readStat(`/proc/${pid}/stat`)?.fields[1])
  return Number.isInteger(parent) ? parent : null
}

export function rssBytes(pids: readonly number[]): number {
  let total = 0
  for (const pid of pids) {
    try {
      const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
      if (match?.[1] !== undefined) total += Number(match[1]) * 1024
    } catch {
      // A process that has exited holds no memory.
    }
  }
  return total
}

export interface RssSampler {
  /** Stops sampling and returns the peak in bytes. */
  stop(): number
}

export function sampleRss(pids: readonly number[], intervalMs: number): RssSampler {
  assert(intervalMs >= 10)
  let peak = rssBytes(pids)
  const timer = setInterval(() => {
    peak = Math.max(peak, rssBytes(pids))
  }, intervalMs)
  return {
    stop() {
      clearInterval(timer)
      peak = Math.max(peak, rssBytes(pids))
      return peak
    },
  }
}
