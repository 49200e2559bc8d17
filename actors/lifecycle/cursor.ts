/** @module The lifecycle actor's record in its store (a local record: of this node alone): where
 * the pass is and when it began, saved after each step, so that a restart resumes the pass (or
 * waits for the next) rather than starting over. The record comes from disk: it is read through a
 * check, and a bad one counts as none (a new pass starts). */
import type { Context } from '../../protocol/actor.js'
import type { Result } from '../../protocol/errors.js'
import { LIFECYCLE_RECORD } from '../../protocol/lifecycle.js'
import type { LifecycleCursor, LifecycleState } from './lifecycle-state.js'

/** A call that moves no bytes. */
export const CALL_MS = 10_000

interface LifecycleRecord {
  cursor: LifecycleCursor
  passStartedMs: number
  done: boolean
  /** How far the pass is over the buckets, so that its progress resumes too. */
  bucketsDone: number
  bucketsTotal: number
}

function isCursor(value: unknown): value is LifecycleCursor {
  const cursor = value as Partial<LifecycleCursor> | null
  if (typeof cursor !== 'object' || cursor === null) return false
  const carry = cursor.carry
  const carryValid =
    carry === null ||
    (typeof carry?.key === 'string' &&
      typeof carry.newerMs === 'number' &&
      typeof carry.noncurrent === 'number')
  return (
    (cursor.bucket === null || typeof cursor.bucket === 'string') &&
    ['versions', 'uploads', 'done'].includes(cursor.phase ?? '') &&
    typeof cursor.keyMarker === 'string' &&
    typeof cursor.versionIdMarker === 'string' &&
    carryValid
  )
}

function parseRecord(bytes: Uint8Array): LifecycleRecord | null {
  let value: unknown
  try {
    value = JSON.parse(Buffer.from(bytes).toString('utf8'))
  } catch {
    return null
  }
  const record = value as Partial<LifecycleRecord> | null
  if (typeof record !== 'object' || record === null || !isCursor(record.cursor)) return null
  if (!Number.isSafeInteger(record.passStartedMs) || typeof record.done !== 'boolean') return null
  if (!Number.isSafeInteger(record.bucketsDone) || !Number.isSafeInteger(record.bucketsTotal)) {
    return null
  }
  return record as LifecycleRecord
}

export async function loadRecord(state: LifecycleState, ctx: Context): Promise<Result<null>> {
  const stored = await ctx.call('replica-store', {
    kind: 'system.local-get',
    name: LIFECYCLE_RECORD,
    requestId: 'lifecycle-record',
    deadlineMs: ctx.now() + CALL_MS,
  })
  if (!stored.ok) return stored
  const record = stored.value === null ? null : parseRecord(stored.value)
  if (stored.value !== null && record === null) {
    ctx.log.warn({}, 'the lifecycle record is unreadable: a new pass starts')
  }
  state.loaded = true
  if (record === null) {
    state.passDone = true
    state.nextPassMs = ctx.now()
  } else {
    state.passStartedMs = record.passStartedMs
    state.passDone = record.done
    state.cursor = record.cursor
    state.bucketsDone = record.bucketsDone
    state.bucketsTotal = record.bucketsTotal
    state.nextPassMs = record.passStartedMs + state.intervalMs
  }
  return { ok: true, value: null }
}

export async function saveRecord(
  state: LifecycleState,
  ctx: Context,
  timeoutMs = CALL_MS,
): Promise<void> {
  if (state.passStartedMs === null) return
  const record: LifecycleRecord = {
    cursor: state.cursor,
    passStartedMs: state.passStartedMs,
    done: state.passDone,
    bucketsDone: state.bucketsDone,
    bucketsTotal: state.bucketsTotal,
  }
  const saved = await ctx.call('replica-store', {
    kind: 'system.local-put',
    name: LIFECYCLE_RECORD,
    value: new Uint8Array(Buffer.from(JSON.stringify(record))),
    requestId: 'lifecycle-record',
    deadlineMs: ctx.now() + timeoutMs,
  })
  if (!saved.ok)
    ctx.log.warn({ code: saved.code, detail: saved.detail }, 'lifecycle record not saved')
}
