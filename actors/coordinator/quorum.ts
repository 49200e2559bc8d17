/** @module Gathering replicas' answers: a quorum is reached as soon as enough answered ok, and is
 * known to be out of reach as soon as too many failed; the other answers keep coming in the
 * background (a replica that lags still applies a write). Which failure a client sees when the
 * quorum fails: the replicas' own refusal when they refused the request itself (a bad digest, a
 * missing upload, a precondition), else 503 with how many answered. */
import { fail, type ErrorCode, type Result } from '../../protocol/errors.js'

export interface Gathered<T> {
  oks: { index: number; value: T }[]
  failures: { index: number; code: ErrorCode; detail: string }[]
}

/** Waits until `need` answers are ok or that many can no longer be. */
export function gather<T>(answers: readonly Promise<Result<T>>[], need: number) {
  return new Promise<Gathered<T>>((resolve) => {
    const gathered: Gathered<T> = { oks: [], failures: [] }
    let settled = 0
    const check = (): void => {
      const outOfReach = answers.length - gathered.failures.length < need
      if (gathered.oks.length >= need || outOfReach || settled === answers.length) {
        resolve(gathered)
      }
    }
    if (answers.length === 0 || need <= 0) resolve(gathered)
    answers.forEach((answer, index) => {
      answer.then(
        (result) => {
          settled++
          if (result.ok) gathered.oks.push({ index, value: result.value })
          else gathered.failures.push({ index, code: result.code, detail: result.detail })
          check()
        },
        (error: unknown) => {
          settled++
          gathered.failures.push({ index, code: 'internal', detail: String(error) })
          check()
        },
      )
    })
  })
}

/** How long an asked replica may stay silent before the next one is asked too: a replica that
 * hangs (stopped, overloaded) costs a quorum this much, not the request's whole deadline. */
export const HEDGE_MS = 1_000

/** Asks replicas in order until `need` answered ok: `need` at once, and one more for each that
 * fails or stays silent for HEDGE_MS (`after` schedules that on the actor's clock), so a healthy
 * quorum costs exactly `need` requests (the local store first, as replicas are ordered) and a
 * failed or hung replica is replaced by the next. */
export function askInTurn<R, T>(
  replicas: readonly R[],
  need: number,
  ask: (replica: R) => Promise<Result<T>>,
  after: (ms: number, task: () => void) => () => void,
): Promise<Gathered<T>> {
  return new Promise((resolve) => {
    const gathered: Gathered<T> = { oks: [], failures: [] }
    let pending = 0
    let next = 0
    let done = false
    const timers: (() => void)[] = []
    const finish = (): void => {
      if (done) return
      if (gathered.oks.length >= need || (pending === 0 && next >= replicas.length)) {
        done = true
        for (const cancel of timers) cancel()
        resolve(gathered)
      }
    }
    const start = (): void => {
      const replica = replicas[next]
      if (done || replica === undefined) return
      const index = next++
      pending++
      let settled = false
      timers.push(after(HEDGE_MS, () => (settled ? undefined : start())))
      const settle = (failure: { code: ErrorCode; detail: string } | null, value?: T): void => {
        settled = true
        pending--
        if (failure === null) gathered.oks.push({ index, value: value as T })
        else {
          gathered.failures.push({ index, ...failure })
          start()
        }
        finish()
      }
      ask(replica).then(
        (result) =>
          result.ok
            ? settle(null, result.value)
            : settle({ code: result.code, detail: result.detail }),
        (error: unknown) => settle({ code: 'internal', detail: String(error) }),
      )
    }
    for (let i = 0; i < need; i++) start()
    finish()
  })
}

/** Failures that say a replica could not be reached or could not take the request now: the next
 * attempt may succeed. Any other failure is the replica's answer to the request itself. */
const TRANSIENT: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'unavailable',
  'timeout',
  'busy',
  'internal',
])

/** The client's answer when fewer than `need` replicas answered ok. */
export function quorumFailure(
  what: 'write' | 'read',
  gathered: Gathered<unknown>,
  need: number,
): Result<never> {
  const refusal = gathered.failures.find((failure) => !TRANSIENT.has(failure.code))
  if (refusal !== undefined) return fail(refusal.code, refusal.detail)
  const busy = gathered.failures.some((failure) => failure.code === 'busy')
  const reasons = gathered.failures.map((failure) => `: ${failure.detail}`).slice(0, 3)
  return fail(
    busy ? 'busy' : 'unavailable',
    `${what} quorum ${gathered.oks.length}/${need}${reasons.join(';')}`,
  )
}

/** The client's answer when fewer replicas are reachable than the quorum needs, known before any
 * replica is asked (and before the body is read). */
export function unreachable(what: 'write' | 'read', reachable: number, need: number) {
  return fail('unavailable', `${what} quorum ${reachable}/${need}: too few replicas reachable`)
}

/** Which quorum a failed answer missed, from the failure the two functions above make; null for
 * any other answer (a replica's own refusal is the request's fault, not the cluster's). */
export function quorumMissed(result: Result<unknown>): 'write' | 'read' | null {
  if (result.ok || (result.code !== 'unavailable' && result.code !== 'busy')) return null
  const missed = /^(write|read) quorum \d+\/\d+/.exec(result.detail)
  return missed === null ? null : (missed[1] as 'write' | 'read')
}
