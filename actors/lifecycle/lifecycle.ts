/** @module The lifecycle actor, on every storage node, single or cluster: runs every bucket's
 * lifecycle rules in passes (pass.ts), one starting SVC_LIFECYCLE_INTERVAL_SECS after the last
 * began, at most SVC_LIFECYCLE_ACTIONS_PER_SECOND actions a second, resumed after a restart from
 * its record (cursor.ts). Owns nothing but that record: every expiry and abort is a request to the
 * node's object actor, as a client's would be. Answers `lifecycle.status`. */
import type { Actor } from '../../protocol/actor.js'
import { ok } from '../../protocol/errors.js'
import { saveRecord } from './cursor.js'
import { createState, type LifecycleState } from './lifecycle-state.js'
import { runPasses, statusOf } from './pass.js'

/** A stop saves the pass's place within this, well inside the supervisor's stop budget. */
const STOP_SAVE_MS = 2_000

export const lifecycle: Actor<LifecycleState, 'lifecycle'> = {
  name: 'lifecycle',
  init(ctx) {
    const state = createState(ctx)
    // The loop outlives init: it asks the store, which may be wired a moment later.
    runPasses(state, ctx).catch((error: unknown) => {
      ctx.log.error({ err: error }, 'the lifecycle loop stopped')
    })
    return state
  },
  handlers: {
    'lifecycle.status': (state) => ok(statusOf(state)),
  },
  async stop(state, ctx) {
    state.stopping = true
    state.wake?.()
    if (state.loaded && !state.passDone) await saveRecord(state, ctx, STOP_SAVE_MS)
  },
}
