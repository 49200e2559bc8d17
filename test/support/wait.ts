/** @module How a test waits: `pollUntil` for something that happens in the background (a check
 * polled, bounded in time, rather than a sleep of a guessed length), `sleep` for a pause the test
 * itself means, such as pacing a load. */

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** Polls `check` every `intervalMs` until it holds or `timeoutMs` pass; a check that throws (a
 * failed scrape, a file not there yet) counts as false. Resolves to whether it held. */
export async function pollUntil(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 5_000,
  intervalMs = 10,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const held = await Promise.resolve()
      .then(check)
      .catch(() => false)
    if (held) return true
    if (Date.now() >= deadline) return false
    await sleep(intervalMs)
  }
}
