/** @module The scrubber's record in its store (a local record, `system.local-*`: of this node
 * alone): where the pass is and when it began, saved every CURSOR_SAVE_MS while it scans and at
 * its end, so that a restart resumes the pass (or waits for the next) instead of starting over.
 * A node without a record starts its first pass after a random part of a quarter period, so that
 * nodes started together do not scan together. The record comes from disk: it is read through a
 * check, and a bad one counts as none. */
import type { Context } from '../../protocol/actor.js'
import type { Result } from '../../protocol/errors.js'
import { SCRUBBER_RECORD } from '../../protocol/scrubbing.js'
import type { ScrubberState } from './scrub-state.js'

export const CURSOR_SAVE_MS = 30_000
/** A call to the store that moves no bytes. */
export const STORE_CALL_MS = 10_000

interface ScrubberRecord {
  cursor: string | null
  passStartedMs: number
  done: boolean
}

function parseRecord(bytes: Uint8Array): ScrubberRecord | null {
  let value: unknown
  try {
    value = JSON.parse(Buffer.from(bytes).toString('utf8'))
  } catch {
    return null
  }
  const record = value as Partial<ScrubberRecord> | null
  if (typeof record !== 'object' || record === null) return null
  const cursor = record.cursor
  const cursorValid =
    cursor === null || (typeof cursor === 'string' && /^[0-9a-f]{64}$/.test(cursor))
  if (!cursorValid || !Number.isSafeInteger(record.passStartedMs)) return null
  if (typeof record.done !== 'boolean') return null
  return record as ScrubberRecord
}

/** Reads the record and sets where the scan goes on from. */
export async function loadRecord(state: ScrubberState, ctx: Context): Promise<Result<null>> {
  const stored = await ctx.call('replica-store', {
    kind: 'system.local-get',
    name: SCRUBBER_RECORD,
    requestId: 'scrubber-record',
    deadlineMs: ctx.now() + STORE_CALL_MS,
  })
  if (!stored.ok) return stored
  const record = stored.value === null ? null : parseRecord(stored.value)
  if (stored.value !== null && record === null) {
    ctx.log.warn({}, 'the scrubber record is unreadable: a new pass starts')
  }
  state.loaded = true
  state.savedMs = ctx.now()
  if (record === null) {
    // Nodes started together spread their passes over a quarter period.
    const spread = new DataView(ctx.randomBytes(4).buffer).getUint32(0) / 2 ** 32
    state.passDone = true
    state.nextPassMs = ctx.now() + Math.floor((spread * state.periodMs) / 4)
  } else {
    state.passStartedMs = record.passStartedMs
    state.passDone = record.done
    state.cursor = record.done ? null : record.cursor
    state.nextPassMs = record.passStartedMs + state.periodMs
  }
  return { ok: true, value: null }
}

/** Saves where the pass is; a failure is logged (the next save comes soon enough). */
export async function saveRecord(
  state: ScrubberState,
  ctx: Context,
  timeoutMs = STORE_CALL_MS,
): Promise<void> {
  if (state.passStartedMs === null) return
  const record: ScrubberRecord = {
    cursor: state.cursor,
    passStartedMs: state.passStartedMs,
    done: state.passDone,
  }
  const saved = await ctx.call('replica-store', {
    kind: 'system.local-put',
    name: SCRUBBER_RECORD,
    value: new Uint8Array(Buffer.from(JSON.stringify(record))),
    requestId: 'scrubber-record',
    deadlineMs: ctx.now() + timeoutMs,
  })
  if (saved.ok) state.savedMs = ctx.now()
  else ctx.log.warn({ code: saved.code, detail: saved.detail }, 'scrubber record not saved')
}
