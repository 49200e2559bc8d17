/** @module Page cache hygiene between phases. A write phase is measured from a clean start: the
 * dirty pages an earlier phase (or target) left behind would otherwise be written back during it
 * and throttle it, so a target's figures would depend on what ran before it. */
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { performance } from 'node:perf_hooks'

/** Writing back a few GiB takes seconds here; past this we go on and say so. */
const SYNC_TIMEOUT_MS = 60_000

/** Runs sync(1); prints a line only when there was something worth waiting for. */
export async function flushDirtyPages(label: string): Promise<void> {
  const dirtyBytes = dirtyPageBytes()
  const startMs = performance.now()
  const error = await new Promise<Error | null>((resolve) => {
    execFile('sync', [], { timeout: SYNC_TIMEOUT_MS }, (failure) => resolve(failure))
  })
  const seconds = (performance.now() - startMs) / 1000
  if (error !== null) {
    console.log(`  ${label}: sync failed after ${seconds.toFixed(1)} s: ${error.message}`)
  } else if (seconds >= 1) {
    const dirty = (dirtyBytes / 1e6).toFixed(0)
    console.log(`  ${label}: wrote back ${dirty} MB of dirty pages in ${seconds.toFixed(1)} s`)
  }
}

/** Dirty plus under-writeback page cache, from /proc/meminfo; 0 where there is none. */
function dirtyPageBytes(): number {
  try {
    const meminfo = readFileSync('/proc/meminfo', 'utf8')
    let total = 0
    for (const name of ['Dirty', 'Writeback']) {
      const match = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(meminfo)
      if (match?.[1] !== undefined) total += Number(match[1]) * 1024
    }
    return total
  } catch {
    return 0
  }
}
