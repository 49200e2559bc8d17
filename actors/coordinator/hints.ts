/** @module Hints of a change: every replica of the key that did not take it (unreachable when the
 * change was sent, or failed since) is recorded by this node's store (`hint.put`), so the miss is
 * never silent and repair knows what to bring it. Replicas known to miss the change are recorded
 * before the client's answer; one that fails after the answer is recorded when it does. A write
 * whose quorum failed may still have been taken by some replica whose answer came later (or was
 * lost): its misses are recorded once every answer is in, as in Cassandra's hinted handoff, since
 * the replicas that took it spread it by repair all the same (and a multipart complete that a
 * replica missed would leave it the upload open for good). Nothing is recorded for a change no
 * replica took. */
import type { Context } from '../../protocol/actor.js'
import type { Result } from '../../protocol/errors.js'
import type { Hint } from '../../protocol/messages.js'
import type { Replica } from './replicas.js'

/** How long recording a hint may take. */
const HINT_CALL_MS = 5_000
/** A replica that failed a change after it was sent may be this node's own store, restarting
 * (killed, crashed): the hint of it is asked for again this many times, this long apart, as a
 * hint not recorded is a miss nothing may bring (a replica that missed a multipart complete keeps
 * its upload open once later writes make the key alike everywhere). */
const LATE_HINT_ATTEMPTS_MAX = 4
const LATE_HINT_RETRY_MS = 1_000

export interface Change {
  bucket: string
  keys: readonly string[]
  stamp: string
}

async function record(
  ctx: Context,
  change: Change,
  nodes: readonly string[],
  attempts = 1,
): Promise<void> {
  if (nodes.length === 0) return
  const hints: Hint[] = nodes.flatMap((node) =>
    change.keys.map((key) => ({ node, bucket: change.bucket, key, stamp: change.stamp })),
  )
  const put = () =>
    ctx.call('replica-store', {
      kind: 'hint.put',
      hints,
      requestId: 'hint',
      deadlineMs: ctx.now() + HINT_CALL_MS,
    })
  let recorded = await put()
  for (let attempt = 1; attempt < attempts; attempt++) {
    if (recorded.ok || recorded.code !== 'unavailable') break
    await new Promise<void>((resolve) => ctx.after(LATE_HINT_RETRY_MS, resolve))
    recorded = await put()
  }
  if (!recorded.ok) {
    ctx.log.error({ nodes, detail: recorded.detail, stamp: change.stamp }, 'hint not recorded')
  }
}

type Sent = readonly { replica: Replica; answer: Promise<Result<unknown>> }[]

/** Records the replicas of `all` that were not sent the change now, and those of `sent` whose
 * answer fails, when it does. `applied` says whether any replica took the change by the time its
 * quorum was reached or failed; if none had, the misses wait for every answer. */
export async function hintMisses(
  ctx: Context,
  change: Change,
  all: readonly string[],
  sent: Sent,
  applied: boolean,
): Promise<void> {
  if (!applied) {
    void hintOnceAnswered(ctx, change, all, sent)
    return
  }
  const asked = new Set(sent.map((one) => one.replica.id))
  for (const one of sent) {
    void one.answer.then((result) =>
      result.ok ? undefined : record(ctx, change, [one.replica.id], LATE_HINT_ATTEMPTS_MAX),
    )
  }
  await record(
    ctx,
    change,
    all.filter((id) => !asked.has(id)),
  )
}

/** A write none had taken when its quorum failed: once every answer is in (each bounded by the
 * request's deadline), the replicas that missed it are recorded if any took it after all. */
async function hintOnceAnswered(
  ctx: Context,
  change: Change,
  all: readonly string[],
  sent: Sent,
): Promise<void> {
  const answers = await Promise.all(
    sent.map((one) => one.answer.then((result) => result.ok).catch(() => false)),
  )
  if (!answers.includes(true)) return
  const asked = new Set(sent.map((one) => one.replica.id))
  const missed = [
    ...all.filter((id) => !asked.has(id)),
    ...sent.filter((_, index) => !answers[index]).map((one) => one.replica.id),
  ]
  await record(ctx, change, missed, LATE_HINT_ATTEMPTS_MAX)
}
