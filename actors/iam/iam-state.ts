/** @module iam's state: users by id and by name, the access-key index SigV4 lookups read, a change
 * counter, login throttling, and the chain that runs changes one at a time. Changes persist first
 * and touch this state after, so a failed write leaves memory as it was. */
import type { KeyLookup } from '../../protocol/messages.js'
import type { LoginThrottle } from './throttle.js'
import { principalOf, type UserRecord } from './user-records.js'

export interface IamState {
  users: Map<string, UserRecord>
  userIdsByName: Map<string, string>
  /** Access key -> secret and principal, for every issued key (bootstrap and users'); a lookup
   * also checks that the key's user is active. */
  keys: Map<string, KeyLookup>
  /** Counts changes to credentials; it starts from the clock so it still grows across restarts. */
  generation: number
  throttle: LoginThrottle
  /** A hash of a random password: what a login for an unknown user is checked against. */
  dummyHash: string
  jwtSecret: string
  jwtTtlSecs: number
  masterKey: string
  /** Tail of the queue of changes: each change starts when the one before it has finished. */
  changes: Promise<unknown>
}

/** Runs `change` after every change queued before it. The mailbox bounds how many can wait. */
export function exclusively<T>(state: IamState, change: () => Promise<T>): Promise<T> {
  const run = state.changes.then(change)
  state.changes = run.catch(() => undefined)
  return run
}

/** Re-derives a user's entry in the key index from the user record. */
export function indexUserKey(state: IamState, user: UserRecord, secretKey: string): void {
  if (user.credentials === null) return
  state.keys.set(user.credentials.accessKey, {
    secretKey,
    principal: principalOf(user),
    generation: state.generation,
  })
}
