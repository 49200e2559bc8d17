/** @module Health check command for the container image's HEALTHCHECK and other supervisors:
 * probes the node that the same environment configures (runtime/health-probe.ts) and exits 0 when
 * /health answers 200, 1 otherwise with one line saying what it saw. */
import { loadConfig } from './config.js'
import { healthUrl, probe } from './health-probe.js'

async function main(): Promise<void> {
  const url = healthUrl(loadConfig(process.env))
  const seen = await probe(url)
  if (seen === 200) return
  console.error(`${url.href}: ${typeof seen === 'number' ? `status ${seen}` : seen}`)
  process.exitCode = 1
}

main().catch((error: unknown) => {
  console.error(`health probe: ${error instanceof Error ? error.message : String(error)}`)
  process.exitCode = 1
})
