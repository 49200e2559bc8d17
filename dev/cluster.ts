/** @module `npm run cluster`: starts a local development cluster (dev/cluster-plan.ts: 3 storage
 * nodes and a gateway on 127.0.0.1, data under ./data-cluster/<node id>/), prefixes each member's
 * output with its id, and prints every endpoint and the keys once all answer /health. SIGINT or
 * SIGTERM stops every member by its PID (dev/member-process.ts) and exits 0; a member that exits
 * on its own, or one not healthy in time, is reported and the rest are stopped, exit 1. */
import { mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { clusterPlan, endpointLines, type ClusterPlan } from './cluster-plan.js'
import { waitHealthy } from './health-wait.js'
import { spawnMember, type MemberProcess } from './member-process.js'

const MAIN_JS = join(dirname(fileURLToPath(import.meta.url)), '..', 'runtime', 'main.js')
/** Each node's first catalog pull waits for the others; a loaded machine starts threads slowly. */
const HEALTH_TIMEOUT_MS = 90_000
/** A configuration the script cannot use, as the node's own exit code for one. */
const EXIT_UNUSABLE = 2

function readPlan(): ClusterPlan | null {
  try {
    return clusterPlan(process.env, process.cwd())
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error))
    return null
  }
}

async function main(): Promise<void> {
  const plan = readPlan()
  if (plan === null) {
    process.exitCode = EXIT_UNUSABLE
    return
  }
  for (const { dataDir } of plan.members) {
    if (dataDir !== null) mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  }
  const members: MemberProcess[] = []
  let stopping = false
  const stopAll = (reason: string, exitCode: number): void => {
    if (stopping) return
    stopping = true
    console.error(reason)
    void Promise.all(members.map((member) => member.stop())).then(() => {
      console.error('every member stopped')
      process.exit(exitCode)
    })
  }
  process.on('SIGINT', () => stopAll('SIGINT: stopping every member', 0))
  process.on('SIGTERM', () => stopAll('SIGTERM: stopping every member', 0))
  for (const { id, env } of plan.members) {
    try {
      members.push(spawnMember(id, MAIN_JS, { ...process.env, ...env }))
    } catch (error) {
      stopAll(`${error instanceof Error ? error.message : String(error)}: stopping all`, 1)
      return
    }
    void members.at(-1)?.exited.then(({ code, signal }) => {
      const how = signal === null ? `code ${code}` : `signal ${signal}`
      stopAll(`${id} exited on its own (${how}): stopping the others`, 1)
    })
  }
  const healthy = await Promise.all(
    plan.members.map((member) => waitHealthy(member.httpUrl, HEALTH_TIMEOUT_MS, () => stopping)),
  )
  if (stopping) return
  const late = plan.members.filter((_, at) => healthy[at] !== true).map((member) => member.id)
  if (late.length > 0) {
    stopAll(`not healthy within ${HEALTH_TIMEOUT_MS} ms: ${late.join(' ')}; stopping all`, 1)
    return
  }
  const pids = new Map(members.map((member) => [member.id, member.pid]))
  console.log(endpointLines(plan, pids).join('\n'))
}

main().catch((error: unknown) => {
  console.error(error)
  process.exit(1)
})
