/** Goal: the deterministic simulation of the cluster (test/sim/) finds no problem on seeds 101 to
 * 200, half of the 200 fixed seeds every run checks (the other half is in
 * simulation-seeds-first-half.test.ts, so that two cores share them). Method: `checkSeeds` runs
 * the real actors of 3 to 5 nodes in this thread on virtual time with each seed's faults. */
import { test } from 'uvu'
import { checkSeeds, seedRange } from '../sim/seed-check.js'

test('seeds 101 to 200 run without a problem', async () => {
  await checkSeeds(seedRange(101, 200))
})

test.run()
