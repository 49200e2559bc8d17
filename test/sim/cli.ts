/** @module `npm run sim -- --seeds N [--from S]` runs N seeds and reports each failing one with
 * the command that replays it; `--seed N` replays one with its trace and history; `--grace-ms G`
 * keeps tombstones G ms instead of the simulation's default. */
import { simulate } from './simulation.js'

function option(name: string): number | undefined {
  const at = process.argv.indexOf(`--${name}`)
  if (at < 0) return undefined
  const value = Number(process.argv[at + 1])
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`--${name} takes a whole number`)
  return value
}

async function main(): Promise<void> {
  const grace = option('grace-ms')
  const gcGraceMs = grace === undefined ? {} : { gcGraceMs: grace }
  const again = grace === undefined ? '' : ` --grace-ms ${grace}`
  const one = option('seed')
  if (one !== undefined) {
    const report = await simulate({ seed: one, trace: true, ...gcGraceMs })
    console.log(`# seed ${one}: ${JSON.stringify(report.plan)}`)
    console.log('# trace\n' + report.trace)
    console.log('# history\n' + report.fingerprint)
    console.log(
      `# ${report.acknowledged} operations acknowledged, ${report.hintsDelivered} hints ` +
        `delivered, ${report.tombstonesPurged} tombstones purged, ${report.events} events`,
    )
    if (report.problems.length === 0) console.log('# no problem found')
    else console.log('# problems\n' + report.problems.join('\n'))
    process.exitCode = report.problems.length === 0 ? 0 : 1
    return
  }
  const count = option('seeds') ?? 100
  const from = option('from') ?? 1
  const started = process.hrtime.bigint()
  let failed = 0
  let hints = 0
  let purged = 0
  for (let seed = from; seed < from + count; seed++) {
    const report = await simulate({ seed, ...gcGraceMs })
    hints += report.hintsDelivered
    purged += report.tombstonesPurged
    if (report.problems.length > 0) {
      failed++
      console.log(
        `seed ${seed} FAILED: ${report.problems.length} problems, first: ${report.problems[0]}`,
      )
      console.log(`  replay: npm run sim -- --seed ${seed}${again}`)
    }
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9
  console.log(
    `${count} seeds from ${from}: ${count - failed} passed, ${failed} failed, ` +
      `${(count / seconds).toFixed(2)} seeds/s, ${hints} hints delivered, ` +
      `${purged} tombstones purged`,
  )
  process.exitCode = failed === 0 ? 0 : 1
}

await main()
