/** @module Login throttling. Failures are counted per username and per client address in a sliding
 * window; past the limit a login is refused (too_many_requests, with the seconds until the oldest
 * counted failure leaves the window) before any password is checked, so a throttled guess costs
 * nothing. Unknown and known usernames are throttled alike, so throttling reveals no account. A
 * successful login clears its username's count, not its address's. Both maps are bounded: the
 * least recently failed entry goes first. In a cluster every storage node counts the failures of
 * every other (shared-throttle.ts). */

export const LOGIN_WINDOW_MS = 5 * 60_000
export const FAILURES_PER_USERNAME_MAX = 5
/** Higher than per username: several people may share one address (NAT, a proxy). */
export const FAILURES_PER_ADDRESS_MAX = 20
const TRACKED_ENTRIES_MAX = 10_000

export interface LoginThrottle {
  byUsername: Map<string, number[]>
  byAddress: Map<string, number[]>
}

export function newLoginThrottle(): LoginThrottle {
  return { byUsername: new Map(), byAddress: new Map() }
}

/** Seconds to wait before the next attempt, or 0 when the attempt may go ahead. */
export function loginDelaySecs(
  throttle: LoginThrottle,
  username: string,
  address: string,
  nowMs: number,
): number {
  const waitMs = Math.max(
    waitFor(throttle.byUsername, username, FAILURES_PER_USERNAME_MAX, nowMs),
    waitFor(throttle.byAddress, address, FAILURES_PER_ADDRESS_MAX, nowMs),
  )
  return waitMs === 0 ? 0 : Math.ceil(waitMs / 1000)
}

export function recordFailure(
  throttle: LoginThrottle,
  username: string,
  address: string,
  nowMs: number,
): void {
  remember(throttle.byUsername, username, FAILURES_PER_USERNAME_MAX, nowMs)
  remember(throttle.byAddress, address, FAILURES_PER_ADDRESS_MAX, nowMs)
}

/** Clears the username's failures; answers whether it had any. */
export function recordSuccess(throttle: LoginThrottle, username: string): boolean {
  return throttle.byUsername.delete(username)
}

function recent(failures: number[] | undefined, nowMs: number): number[] {
  return (failures ?? []).filter((atMs) => nowMs - atMs < LOGIN_WINDOW_MS)
}

function waitFor(map: Map<string, number[]>, key: string, max: number, nowMs: number): number {
  const failures = recent(map.get(key), nowMs)
  if (failures.length < max) return 0
  const oldest = failures[failures.length - max] ?? nowMs
  return Math.max(1, oldest + LOGIN_WINDOW_MS - nowMs)
}

function remember(map: Map<string, number[]>, key: string, max: number, nowMs: number): void {
  // Only the newest `max` failures matter: they decide when the next attempt may go ahead.
  const failures = [...recent(map.get(key), nowMs), nowMs].slice(-max)
  map.delete(key)
  map.set(key, failures)
  if (map.size > TRACKED_ENTRIES_MAX) {
    const oldest = map.keys().next().value
    if (oldest !== undefined) map.delete(oldest)
  }
}
