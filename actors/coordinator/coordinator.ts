/** @module Coordinator: the seam between the ingress and the replicas. In single mode every object
 * and bucket request goes unchanged to the local replica-store (its body or stream handle moves
 * along, transferred, never copied); cluster mode will fan out to replicas and gather quorums here.
 * Owns no state of its own. Handles every ObjectMsg kind (bucket.stats and a forced bucket.delete
 * among them) and system.stats. Each message goes on as it came, its deadline included: a forced
 * delete empties its bucket in batches until the caller's deadline, which no hop may shorten. */
import type { Actor, Context } from '../../protocol/actor.js'
import type { Result } from '../../protocol/errors.js'
import type { CoordinatorMsg } from '../../protocol/messages.js'

type CoordinatorState = Record<string, never>

export const coordinator: Actor<CoordinatorState, CoordinatorMsg> = {
  name: 'coordinator',
  init: () => ({}),
  handle(_state, msg, ctx: Context): Promise<Result<unknown>> {
    return ctx.call('replica-store', msg)
  },
}
