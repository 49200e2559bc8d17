/** @module A lifecycle pass: bucket after bucket (in name order), the rules of each that has them
 * run over its versions, a page at a time, then over its multipart uploads. Each action is the
 * request a client would send, through the node's object actor (the store, or in a cluster the
 * coordinator's quorum path): a delete without a version id (a marker in a versioned bucket), a
 * delete of a version by id, an abort. So object lock is honoured where it is for clients: a
 * protected version's delete is refused, and counted as kept. Actions are paced
 * (SVC_LIFECYCLE_ACTIONS_PER_SECOND); failures back off; the pass's place is saved after each step.
 *
 * In a cluster every node runs passes, and each bucket belongs to one of them: the Alive storage
 * node that ranks first for the bucket's name (rendezvous hashing, so buckets spread over nodes and
 * move only when their node leaves). Nodes whose views differ for a moment may both run a bucket;
 * every action is one a second run finds done. */
import { createHash } from 'node:crypto'
import { objectActor, type Context } from '../../protocol/actor.js'
import { ok, type Result } from '../../protocol/errors.js'
import type { LifecycleStatus } from '../../protocol/lifecycle.js'
import {
  currentVersionAction,
  needsTags,
  noncurrentVersionAction,
  uploadAction,
  type LifecycleConfiguration,
} from '../../protocol/s3-rules/lifecycle.js'
import type { Tag } from '../../protocol/tagging.js'
import { backoffMs } from '../../protocol/timing.js'
import { CALL_MS, loadRecord, saveRecord } from './cursor.js'
import { firstCursor, type LifecycleState } from './lifecycle-state.js'

/** Versions read per page, and uploads. */
const PAGE_VERSIONS = 250
const PAGE_UPLOADS = 1000
/** Pages of uploads one bucket's step reads at most; the rest wait for the next pass. */
const UPLOAD_PAGES_MAX = 100

export async function runPasses(state: LifecycleState, ctx: Context): Promise<void> {
  while (!state.stopping) {
    const waitMs = await step(state, ctx)
    if (waitMs > 0 && !state.stopping) await pause(state, ctx, waitMs)
  }
}

/** Waits `ms`, or less if woken (stop). */
function pause(state: LifecycleState, ctx: Context, ms: number): Promise<void> {
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

function call(ctx: Context) {
  return { requestId: 'lifecycle', deadlineMs: ctx.now() + CALL_MS }
}

/** One step; answers how long to wait before the next. */
async function step(state: LifecycleState, ctx: Context): Promise<number> {
  if (!state.loaded) {
    // The store may not be up yet when this node starts: the record is asked for again.
    const loaded = await loadRecord(state, ctx)
    if (loaded.ok) return 0
    ctx.log.info({ code: loaded.code }, 'the lifecycle record is not readable yet')
    return backoffMs(1)
  }
  const now = ctx.now()
  if (state.passDone) {
    if (now < state.nextPassMs) return state.nextPassMs - now
    const started = await startPass(state, ctx)
    if (!started.ok) return settled(state, ctx, started)
  }
  const stepped = await bucketStep(state, ctx)
  if (stepped.ok) await saveRecord(state, ctx)
  return settled(state, ctx, stepped)
}

function settled(state: LifecycleState, ctx: Context, result: Result<unknown>): number {
  if (result.ok) {
    state.consecutiveErrors = 0
    return 0
  }
  state.counters.errors += 1
  state.consecutiveErrors += 1
  ctx.log.warn({ code: result.code, detail: result.detail }, 'lifecycle step failed')
  return backoffMs(state.consecutiveErrors)
}

async function startPass(state: LifecycleState, ctx: Context): Promise<Result<null>> {
  const total = await countBuckets(ctx)
  if (!total.ok) return total
  state.passStartedMs = ctx.now()
  state.passDone = false
  state.cursor = { ...firstCursor(null), phase: 'done' }
  state.bucketsTotal = total.value
  state.bucketsDone = 0
  state.bucketsWithRules = 0
  return ok(null)
}

/** Buckets there are, counted a page at a time (bounded). */
async function countBuckets(ctx: Context): Promise<Result<number>> {
  let after = ''
  let total = 0
  for (let pages = 0; pages < 1000; pages++) {
    const page = await ctx.call(objectActor(ctx.config), {
      kind: 'bucket.list',
      owner: null,
      prefix: '',
      after,
      limit: 1000,
      ...call(ctx),
    })
    if (!page.ok) return page
    total += page.value.buckets.length
    const last = page.value.buckets.at(-1)
    if (!page.value.truncated || last === undefined) break
    after = last.name
  }
  return ok(total)
}

/** Moves to the next bucket, or ends the pass when there is none. */
async function nextBucket(state: LifecycleState, ctx: Context): Promise<Result<null>> {
  const page = await ctx.call(objectActor(ctx.config), {
    kind: 'bucket.list',
    owner: null,
    prefix: '',
    after: state.cursor.bucket ?? '',
    limit: 1,
    ...call(ctx),
  })
  if (!page.ok) return page
  const next = page.value.buckets[0]
  if (next === undefined) {
    state.passDone = true
    state.lastPassEndedMs = ctx.now()
    state.nextPassMs = (state.passStartedMs ?? ctx.now()) + state.intervalMs
    state.counters.passesCompleted += 1
    return ok(null)
  }
  state.cursor = firstCursor(next.name)
  return ok(null)
}

async function bucketStep(state: LifecycleState, ctx: Context): Promise<Result<null>> {
  const { bucket, phase } = state.cursor
  if (bucket === null || phase === 'done') {
    if (bucket !== null) state.bucketsDone += 1
    return nextBucket(state, ctx)
  }
  const rules = await rulesOf(state, ctx, bucket)
  if (!rules.ok) return rules
  if (rules.value === null) {
    state.cursor.phase = 'done'
    return ok(null)
  }
  if (
    state.cursor.keyMarker === '' &&
    state.cursor.versionIdMarker === '' &&
    phase === 'versions'
  ) {
    state.bucketsWithRules += 1
  }
  return phase === 'versions'
    ? versionsPage(state, ctx, bucket, rules.value)
    : uploadsOf(state, ctx, bucket, rules.value)
}

/** The bucket's rules, when it has some and this node runs it. */
async function rulesOf(
  state: LifecycleState,
  ctx: Context,
  bucket: string,
): Promise<Result<LifecycleConfiguration | null>> {
  const read = await ctx.call(objectActor(ctx.config), {
    kind: 'bucket.setting.get',
    bucket,
    name: 'lifecycle',
    ...call(ctx),
  })
  if (!read.ok) {
    const none = read.code === 'no_such_lifecycle_configuration' || read.code === 'no_such_bucket'
    return none ? ok(null) : read
  }
  if (state.nodeId === null) return ok(read.value as LifecycleConfiguration)
  const owner = await ownerOf(ctx, bucket)
  if (!owner.ok) return owner
  return ok(owner.value === state.nodeId ? (read.value as LifecycleConfiguration) : null)
}

/** The Alive storage node that ranks first for the bucket. */
async function ownerOf(ctx: Context, bucket: string): Promise<Result<string | null>> {
  const view = await ctx.call('gossiper', { kind: 'membership.view', ...call(ctx) })
  if (!view.ok) return view
  let best: { id: string; rank: string } | null = null
  for (const member of view.value.members) {
    if (member.kind !== 'node' || member.status !== 'Alive') continue
    const rank = createHash('sha256').update(`${bucket}\0${member.id}`).digest('hex')
    if (best === null || rank > best.rank) best = { id: member.id, rank }
  }
  return ok(best?.id ?? null)
}

/** Waits until the next action may run. */
async function paced(state: LifecycleState, ctx: Context): Promise<void> {
  const now = ctx.now()
  if (state.paceUntilMs > now) await pause(state, ctx, state.paceUntilMs - now)
  state.paceUntilMs = Math.max(state.paceUntilMs, now) + state.actionGapMs
}

async function tagsOf(
  ctx: Context,
  bucket: string,
  key: string,
  versionId: string,
): Promise<Result<Tag[]>> {
  const read = await ctx.call(objectActor(ctx.config), {
    kind: 'object.attributes.get',
    bucket,
    key,
    versionId,
    ...call(ctx),
  })
  return read.ok ? ok(read.value.attributes.tags ?? []) : read
}

async function deleteOf(
  state: LifecycleState,
  ctx: Context,
  bucket: string,
  key: string,
  versionId: string | null,
): Promise<Result<'done' | 'locked'>> {
  await paced(state, ctx)
  const deleted = await ctx.call(objectActor(ctx.config), {
    kind: 'object.delete',
    bucket,
    key,
    ...(versionId === null ? {} : { versionId }),
    ...call(ctx),
  })
  if (deleted.ok) return ok('done')
  // Object lock keeps the version: the rule waits for its retention or hold to end.
  if (deleted.code === 'access_denied') return ok('locked')
  return deleted
}

/** One page of the bucket's versions, each key's newest first. */
async function versionsPage(
  state: LifecycleState,
  ctx: Context,
  bucket: string,
  rules: LifecycleConfiguration,
): Promise<Result<null>> {
  const page = await ctx.call(objectActor(ctx.config), {
    kind: 'object.list-versions',
    bucket,
    prefix: '',
    delimiter: '',
    keyMarker: state.cursor.keyMarker,
    versionIdMarker: state.cursor.versionIdMarker,
    maxKeys: PAGE_VERSIONS,
    ...call(ctx),
  })
  if (!page.ok) return page.code === 'no_such_bucket' ? done(state) : page
  const { versions, truncated } = page.value
  const nowMs = ctx.now()
  for (const [index, version] of versions.entries()) {
    if (state.stopping) return ok(null)
    const { key, versionId } = version
    let carry = state.cursor.carry
    if (carry?.key !== key) carry = { key, newerMs: 0, noncurrent: 0 }
    let tags: Tag[] | null = null
    if (needsTags(rules, key) && !version.deleteMarker) {
      const read = await tagsOf(ctx, bucket, key, versionId)
      if (read.ok) tags = read.value
    }
    const facts = {
      key,
      size: version.size,
      tags,
      lastModifiedMs: version.lastModifiedMs,
      isDeleteMarker: version.deleteMarker,
    }
    if (version.isLatest) {
      // A marker is alone when the next entry is another key's, or none on a last page.
      const following = versions[index + 1]
      const versionsLeft = following?.key === key || (following === undefined && truncated) ? 1 : 0
      const action = currentVersionAction(rules, { ...facts, versionsLeft }, nowMs, state.dayMs)
      if (action !== null) {
        const removeMarker = action === 'remove-marker'
        const outcome = await deleteOf(state, ctx, bucket, key, removeMarker ? versionId : null)
        if (!outcome.ok) return outcome
        if (outcome.value === 'locked') state.counters.lockedSkipped += 1
        else if (removeMarker) state.counters.deleteMarkersRemoved += 1
        else state.counters.objectsExpired += 1
      }
    } else {
      const noncurrent = {
        ...facts,
        becameNoncurrentMs: carry.newerMs,
        newerNoncurrent: carry.noncurrent,
      }
      if (noncurrentVersionAction(rules, noncurrent, nowMs, state.dayMs) === 'expire') {
        const outcome = await deleteOf(state, ctx, bucket, key, versionId)
        if (!outcome.ok) return outcome
        if (outcome.value === 'locked') state.counters.lockedSkipped += 1
        else state.counters.versionsExpired += 1
      }
      carry.noncurrent += 1
    }
    carry.newerMs = version.lastModifiedMs
    state.cursor.carry = carry
  }
  if (!truncated) {
    state.cursor = {
      ...state.cursor,
      phase: 'uploads',
      keyMarker: '',
      versionIdMarker: '',
      carry: null,
    }
    return ok(null)
  }
  state.cursor.keyMarker = page.value.nextKeyMarker ?? ''
  state.cursor.versionIdMarker = page.value.nextVersionIdMarker ?? ''
  return ok(null)
}

function done(state: LifecycleState): Result<null> {
  state.cursor.phase = 'done'
  return ok(null)
}

/** The bucket's multipart uploads, those its rules abort aborted. */
async function uploadsOf(
  state: LifecycleState,
  ctx: Context,
  bucket: string,
  rules: LifecycleConfiguration,
): Promise<Result<null>> {
  const aborting = rules.rules.some((rule) => rule.enabled && rule.abortUploadsAfterDays !== null)
  let keyMarker = ''
  let uploadIdMarker = ''
  for (let pages = 0; aborting && pages < UPLOAD_PAGES_MAX && !state.stopping; pages++) {
    const page = await ctx.call(objectActor(ctx.config), {
      kind: 'upload.list',
      bucket,
      prefix: '',
      delimiter: '',
      keyMarker,
      uploadIdMarker,
      maxUploads: PAGE_UPLOADS,
      ...call(ctx),
    })
    if (!page.ok) return page.code === 'no_such_bucket' ? done(state) : page
    const nowMs = ctx.now()
    for (const upload of page.value.uploads) {
      if (uploadAction(rules, upload, nowMs, state.dayMs) !== 'abort') continue
      await paced(state, ctx)
      const aborted = await ctx.call(objectActor(ctx.config), {
        kind: 'upload.abort',
        bucket,
        key: upload.key,
        uploadId: upload.uploadId,
        ...call(ctx),
      })
      if (aborted.ok) state.counters.uploadsAborted += 1
      else if (aborted.code !== 'no_such_upload') return aborted
    }
    if (!page.value.truncated) break
    keyMarker = page.value.nextKeyMarker ?? ''
    uploadIdMarker = page.value.nextUploadIdMarker ?? ''
  }
  return done(state)
}

export function statusOf(state: LifecycleState): LifecycleStatus {
  const { counters } = state
  const inPass = !state.passDone && state.passStartedMs !== null
  const iso = (ms: number | null): string | null =>
    ms === null ? null : new Date(ms).toISOString()
  return {
    passes_completed: counters.passesCompleted,
    pass_in_progress: inPass,
    // Before its record is read, the actor knows of no pass yet.
    pass_progress: !state.loaded
      ? 0
      : inPass
        ? state.bucketsDone / Math.max(1, state.bucketsTotal)
        : 1,
    buckets_with_rules: state.bucketsWithRules,
    objects_expired: counters.objectsExpired,
    versions_expired: counters.versionsExpired,
    delete_markers_removed: counters.deleteMarkersRemoved,
    uploads_aborted: counters.uploadsAborted,
    locked_skipped: counters.lockedSkipped,
    errors: counters.errors,
    last_pass_ended_at: iso(state.lastPassEndedMs),
    next_pass_at: state.loaded && state.passDone ? iso(state.nextPassMs) : null,
  }
}
