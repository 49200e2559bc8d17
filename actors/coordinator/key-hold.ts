/** @module Holding a key for a conditional write (If-None-Match, If-Match): the key is claimed on
 * a majority of its replicas (each grants one live claim per key, actors/replica-store/
 * key-claims.ts), checked by a quorum read, written, then released. Majorities intersect, so of
 * two racing conditional writes one holds the key and the other waits, then reads the first's
 * object: one 200, one 412, as S3 answers. A claim not granted is given back and asked again after
 * a short random pause (so two waiting writers do not keep splitting the replicas), until the
 * request's deadline. */
import type { Context } from '../../protocol/actor.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import type { ClusterState } from './cluster-state.js'
import { unreachable } from './quorum.js'
import { askReplica } from './replica-calls.js'
import type { Replica } from './replicas.js'

const RETRY_MS_MIN = 20
const RETRY_JITTER_MS = 60
/** Attempts at most, whatever the deadline: each takes at least RETRY_MS_MIN. */
const ATTEMPTS_MAX = 500
/** How long one claim round may take. */
const CLAIM_CALL_MS = 2_000

/** Gives the key back on every replica that granted it. */
export type Release = () => Promise<void>

export async function holdKey(
  cluster: ClusterState,
  ctx: Context,
  at: { bucket: string; key: string; requestId: string; deadlineMs: number },
  replicas: readonly Replica[],
): Promise<Result<Release>> {
  const need = Math.floor(cluster.settings.rf / 2) + 1
  if (replicas.length < need) return unreachable('write', replicas.length, need)
  const claimant = `${cluster.settings.nodeId}/${Buffer.from(ctx.randomBytes(8)).toString('hex')}`
  const claim = { bucket: at.bucket, key: at.key, claimant, requestId: at.requestId }
  for (let attempt = 0; attempt < ATTEMPTS_MAX; attempt++) {
    const deadlineMs = Math.min(at.deadlineMs, ctx.now() + CLAIM_CALL_MS)
    const answers = await Promise.all(
      replicas.map((replica) =>
        askReplica<{ granted: boolean }>(ctx, replica, { ...claim, kind: 'key.claim', deadlineMs }),
      ),
    )
    const holders = replicas.filter((_, index) => {
      const answer = answers[index]
      return answer?.ok === true && answer.value.granted
    })
    const release: Release = async () => {
      const until = ctx.now() + CLAIM_CALL_MS
      await Promise.all(
        holders.map((replica) =>
          askReplica(ctx, replica, { ...claim, kind: 'key.release', deadlineMs: until }),
        ),
      )
    }
    if (holders.length >= need) return ok(release)
    await release()
    const pause = RETRY_MS_MIN + ((ctx.randomBytes(1)[0] ?? 0) % RETRY_JITTER_MS)
    if (ctx.now() + pause >= at.deadlineMs) break
    await new Promise<void>((resolve) => ctx.after(pause, resolve))
  }
  return fail('busy', `${at.key} is held by other conditional writes`)
}
