/** @module The scrubber's loop: one bounded step at a time (Garage's background workers), each
 * saying how long to wait before the next, through ctx.after. A step reads the record (first),
 * checks a blob a GET reported (first come), or the pass's next blob: pages of blob records from
 * the store after the cursor, each blob read whole and its CRC32 checked, at the pace of pace.ts,
 * yielding while the store is busy. A pass that reaches the last blob ends, and the next begins a
 * period after it began. The cursor is saved every CURSOR_SAVE_MS and at the end of a pass.
 *
 * A copy whose CRC32 is wrong is read again (a transient read error is not corruption); wrong
 * twice, it is counted found (once until healed), logged with its sha256, marked corrupt in its
 * record (reads of it answer `corrupt` at once), and in cluster mode healed from another node
 * (heal.ts). Without a good copy it stays marked, for the next pass. A copy read right whose
 * record or store held it damaged is cleared. Failures back off 1.5^n s, capped. */
import type { Context } from '../../protocol/actor.js'
import type { Result } from '../../protocol/errors.js'
import type { BlobPage } from '../../protocol/scrubbing.js'
import { CURSOR_SAVE_MS, loadRecord, saveRecord, STORE_CALL_MS } from './cursor.js'
import { heal } from './heal.js'
import { backoffMs } from '../../protocol/timing.js'
import { LOAD_YIELD, nextPaceMs, PACE_SLACK_MS, scanBytesPerMs, YIELD_MS } from './pace.js'
import { readWhole } from './read.js'
import { KNOWN_CORRUPT_MAX, type ScrubberState } from './scrub-state.js'

/** Blob records one page asks for. */
export const PAGE_BLOBS = 256

/** Runs steps until stop. */
export async function runScan(state: ScrubberState, ctx: Context): Promise<void> {
  while (!state.stopping) {
    const waitMs = await step(state, ctx)
    if (waitMs > 0 && !state.stopping) await pause(state, ctx, waitMs)
  }
}

/** Waits `ms`, or less if woken (a report came, or stop). */
function pause(state: ScrubberState, ctx: Context, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      state.wake = null
      cancel()
      resolve()
    }
    const cancel = ctx.after(ms, done)
    state.wake = done
  })
}

/** One step; answers how long to wait before the next (0: at once). */
async function step(state: ScrubberState, ctx: Context): Promise<number> {
  const now = ctx.now()
  if (now < state.retryAtMs) return state.retryAtMs - now
  if (!state.loaded) return settled(state, ctx, await loadRecord(state, ctx))
  const reported = state.urgent.values().next()
  if (reported.done !== true) return checkReported(state, ctx, reported.value)
  if (state.passDone) {
    if (now < state.nextPassMs) return state.nextPassMs - now
    startPass(state, now)
  }
  if (now + PACE_SLACK_MS < state.paceUntilMs) return state.paceUntilMs - now
  if (state.page.length === 0) {
    const page = await nextPage(state, ctx)
    if (!page.ok) return settled(state, ctx, page)
    if (page.value.blobs.length === 0) {
      await endPass(state, ctx)
      return 0
    }
    state.page = page.value.blobs
  }
  const entry = state.page[0]
  if (entry === undefined) return 0
  const checked = await checkBlob(state, ctx, entry.sha256, entry.corrupt === true)
  if (!checked.ok) return settled(state, ctx, checked)
  state.page.shift()
  state.cursor = entry.sha256
  const bytesPerMs = scanBytesPerMs(state.storedBytes, state.periodMs)
  state.paceUntilMs = nextPaceMs(state.paceUntilMs, ctx.now(), entry.size, bytesPerMs)
  if (checked.value > LOAD_YIELD) state.paceUntilMs = Math.max(state.paceUntilMs, now + YIELD_MS)
  if (ctx.now() - state.savedMs >= CURSOR_SAVE_MS) await saveRecord(state, ctx)
  return 0
}

/** A failed step backs off; a successful one resets the count. */
function settled(state: ScrubberState, ctx: Context, result: Result<unknown>): number {
  if (result.ok) {
    state.errors.consecutive = 0
    return 0
  }
  state.errors.total++
  state.errors.consecutive++
  state.errors.last = `${result.code}: ${result.detail}`
  const waitMs = result.code === 'busy' ? YIELD_MS : backoffMs(state.errors.consecutive)
  state.retryAtMs = ctx.now() + waitMs
  const fields = { code: result.code, detail: result.detail, waitMs }
  if (isStoreStarting(state, result.code)) ctx.log.info(fields, 'scrubber waits for the store')
  else ctx.log.warn(fields, 'scrubber step failed')
  return waitMs
}

/** Failures of the first step while the store is still starting: the scrubber's loop begins in its
 * init, which may come before the store is wired, so every clean start meets one. */
const STARTING_FAILURES_MAX = 3

function isStoreStarting(state: ScrubberState, code: string): boolean {
  return (
    !state.loaded && code === 'unavailable' && state.errors.consecutive <= STARTING_FAILURES_MAX
  )
}

function startPass(state: ScrubberState, nowMs: number): void {
  state.passDone = false
  state.passStartedMs = nowMs
  state.cursor = null
  state.page = []
}

async function endPass(state: ScrubberState, ctx: Context): Promise<void> {
  state.passDone = true
  state.cursor = null
  state.nextPassMs = (state.passStartedMs ?? ctx.now()) + state.periodMs
  await saveRecord(state, ctx)
  ctx.log.info({ scanned: state.counters.blobsScanned }, 'scrubber pass done')
}

async function nextPage(state: ScrubberState, ctx: Context): Promise<Result<BlobPage>> {
  const page = await ctx.call('replica-store', {
    kind: 'blob.list',
    after: state.cursor,
    limit: PAGE_BLOBS,
    requestId: 'scrubber-page',
    deadlineMs: ctx.now() + STORE_CALL_MS,
  })
  if (page.ok) state.storedBytes = page.value.storedBytes
  return page
}

/** Checks a blob a GET reported; it leaves the queue once checked (or gone). */
async function checkReported(state: ScrubberState, ctx: Context, sha256: string): Promise<number> {
  const checked = await checkBlob(state, ctx, sha256, true)
  if (checked.ok) state.urgent.delete(sha256)
  return settled(state, ctx, checked)
}

/** Reads one blob (twice when the first read fails its CRC32) and acts on the verdict. `held`:
 * the store may hold the copy damaged (its record's mark, or a GET's report), to clear when it
 * reads right. Answers the store's load. */
async function checkBlob(
  state: ScrubberState,
  ctx: Context,
  sha256: string,
  held: boolean,
): Promise<Result<number>> {
  let reading = await readWhole(ctx, sha256)
  if (reading.kind === 'read' && !reading.good) {
    const again = await readWhole(ctx, sha256)
    if (again.kind === 'read' && again.good) {
      ctx.log.warn({ sha256 }, 'a read of a blob failed its CRC32 once: not corruption')
    }
    reading = again
  }
  if (reading.kind === 'gone') return { ok: true, value: 0 }
  if (reading.kind === 'failed') return { ok: false, code: reading.code, detail: reading.detail }
  state.counters.blobsScanned++
  if (reading.good) {
    state.knownCorrupt.delete(sha256)
    if (held || reading.marked) await mark(ctx, sha256, false)
    return { ok: true, value: reading.load }
  }
  await corruptionFound(state, ctx, sha256, reading.size)
  return { ok: true, value: reading.load }
}

async function corruptionFound(
  state: ScrubberState,
  ctx: Context,
  sha256: string,
  size: number,
): Promise<void> {
  if (!state.knownCorrupt.has(sha256)) {
    state.counters.corruptionsFound++
    if (state.knownCorrupt.size < KNOWN_CORRUPT_MAX) state.knownCorrupt.add(sha256)
  }
  ctx.log.error({ sha256, size }, 'blob copy is corrupt: its CRC32 is wrong')
  // Marked first: reads answer `corrupt` (another replica's copy) while the heal runs.
  await mark(ctx, sha256, true)
  const outcome = await heal(state, ctx, sha256, size)
  if (outcome === 'healed') {
    state.counters.corruptionsHealed++
    state.knownCorrupt.delete(sha256)
    ctx.log.info({ sha256 }, 'corrupt blob copy healed from another node')
  } else if (outcome === 'gone') {
    state.knownCorrupt.delete(sha256)
  } else {
    ctx.log.error({ sha256 }, 'no good copy of a corrupt blob: kept for the next pass')
  }
}

async function mark(ctx: Context, sha256: string, corrupt: boolean): Promise<void> {
  const marked = await ctx.call('replica-store', {
    kind: 'blob.mark',
    sha256,
    corrupt,
    requestId: 'scrubber-mark',
    deadlineMs: ctx.now() + STORE_CALL_MS,
  })
  if (!marked.ok) ctx.log.warn({ sha256, code: marked.code }, 'blob mark not recorded')
}
