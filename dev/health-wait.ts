/** @module Waits, under a deadline, until a member's GET /health answers 200: a storage node does
 * once it serves (after its first catalog pull, which needs the other nodes alive). */
import { setTimeout as sleep } from 'node:timers/promises'

const POLL_INTERVAL_MS = 250
const PROBE_TIMEOUT_MS = 2_000

/** Whether /health of `baseUrl` answered 200 before `timeoutMs` passed or `cancelled()` said so. */
export async function waitHealthy(
  baseUrl: string,
  timeoutMs: number,
  cancelled: () => boolean,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline && !cancelled()) {
    if ((await healthStatus(`${baseUrl}/health`)) === 200) return true
    await sleep(POLL_INTERVAL_MS)
  }
  return false
}

async function healthStatus(url: string): Promise<number | null> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) })
    await response.body?.cancel()
    return response.status
  } catch {
    return null // Not listening yet, or no answer in time: asked again at the next poll.
  }
}
