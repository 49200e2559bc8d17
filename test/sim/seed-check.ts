/** @module Runs the simulation on a list of seeds and checks what every run must show: no problem
 * on any seed, clients' operations acknowledged under the faults, and tombstones purged while
 * deleted keys stayed deleted. The unit suites split the seeds they check over several files so
 * that the test runner's slots share them. */
import * as assert from 'uvu/assert'
import { simulate } from './simulation.js'

export async function checkSeeds(seeds: Iterable<number>): Promise<void> {
  const failed: string[] = []
  const started = process.hrtime.bigint()
  let acknowledged = 0
  let purged = 0
  let count = 0
  for (const seed of seeds) {
    count += 1
    const report = await simulate({ seed })
    acknowledged += report.acknowledged
    purged += report.tombstonesPurged
    if (report.problems.length > 0) {
      failed.push(`seed ${seed} (npm run sim -- --seed ${seed}): ${report.problems.join('; ')}`)
    }
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9
  console.log(
    `  ${count} seeds in ${seconds.toFixed(1)} s (${(count / seconds).toFixed(1)} seeds/s), ` +
      `${acknowledged} operations acknowledged, ${purged} tombstones purged`,
  )
  assert.equal(failed, [])
  // The runs did work: clients' writes and reads were acknowledged under the faults.
  assert.ok(acknowledged > count * 20, `${acknowledged} operations acknowledged`)
  // Deleted keys stayed deleted while their tombstones went, during the faults and the calm.
  assert.ok(purged > count, `${purged} tombstones purged`)
}

/** The seeds from `first` to `last`, both included. */
export function seedRange(first: number, last: number): number[] {
  return Array.from({ length: last - first + 1 }, (_, index) => first + index)
}
