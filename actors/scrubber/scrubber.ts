/** @module Scrubber (CLUSTER.md section 8), on every storage node, single or cluster: reads every
 * blob of its store over SVC_SCRUBBER_FULL_SCAN_DAYS at a bounded pace and checks its CRC32 on its
 * own thread (scan.ts); a corrupt copy is marked, counted and, in cluster mode, replaced by a
 * verified copy from another node of the pool (heal.ts). Owns a cursor, never data: the store
 * remains the only owner of files, and the scrubber's record there says where the pass is.
 * Handles `scrubber.check` (the store met a corrupt blob serving a GET: check it now) and
 * `scrubber.status` (its counts and the pass's progress, for /metrics and repair-status). */
import assert from 'node:assert/strict'
import type { Actor } from '../../protocol/actor.js'
import { ok, unreachable } from '../../protocol/errors.js'
import type { ScrubberMsg, ScrubberStatus } from '../../protocol/scrubbing.js'
import { saveRecord } from './cursor.js'
import { progressOf } from './pace.js'
import { runScan } from './scan.js'
import { createState, URGENT_MAX, type ScrubberState } from './scrub-state.js'

/** A stop saves the pass's place within this, well inside the supervisor's stop budget. */
const STOP_SAVE_MS = 2_000

export const scrubber: Actor<ScrubberState, 'scrubber'> = {
  name: 'scrubber',
  init(ctx) {
    const state = createState(ctx)
    // The loop outlives init: it asks the store, which may be wired a moment later.
    runScan(state, ctx).catch((error: unknown) => {
      ctx.log.error({ err: error }, 'the scrubber loop stopped')
    })
    return state
  },
  handlers: {
    'scrubber.check': (state, msg) => {
      assert(/^[0-9a-f]{64}$/.test(msg.sha256), 'scrubber.check of a malformed sha256')
      if (state.urgent.size < URGENT_MAX) state.urgent.add(msg.sha256)
      state.wake?.()
      return ok(null)
    },
    'scrubber.status': (state) => ok(status(state)),
  },
  async stop(state, ctx) {
    state.stopping = true
    state.wake?.()
    if (state.loaded && !state.passDone) await saveRecord(state, ctx, STOP_SAVE_MS)
  },
}

function status(state: ScrubberState): ScrubberStatus {
  const { blobsScanned, corruptionsFound, corruptionsHealed } = state.counters
  const between = state.passDone && state.passStartedMs !== null
  return {
    blobs_scanned: blobsScanned,
    corruptions_found: corruptionsFound,
    corruptions_healed: corruptionsHealed,
    full_scan_progress: between ? 1 : progressOf(state.cursor),
  }
}
