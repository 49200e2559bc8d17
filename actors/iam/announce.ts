/** @module Tells the ingress that an access key changed (revoked, replaced, its user deactivated,
 * demoted or deleted), and waits for its answer: until then the ingress may serve the key from its
 * cache, so the admin request that made the change returns only afterwards. A dead ingress has no
 * cache (a restart starts empty), so `unavailable` counts as done; a full mailbox is retried a few
 * times. */
import type { Context } from '../../protocol/actor.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import type { IamState } from './iam-state.js'

const ATTEMPTS_MAX = 5
const RETRY_DELAY_MS = 20

export async function announceKeyChange(
  state: IamState,
  ctx: Context,
  accessKey: string,
  requestId: string,
  deadlineMs: number,
): Promise<Result<null>> {
  state.generation += 1
  const generation = state.generation
  for (let attempt = 1; attempt <= ATTEMPTS_MAX; attempt += 1) {
    const answer = await ctx.call<null>('http-ingress', {
      kind: 'ingress.forget-key',
      accessKey,
      generation,
      requestId,
      deadlineMs,
    })
    if (answer.ok || answer.code === 'unavailable') return ok(null)
    if (answer.code !== 'busy' || ctx.now() + RETRY_DELAY_MS >= deadlineMs) return answer
    await new Promise<void>((resolve) => ctx.after(RETRY_DELAY_MS, resolve))
  }
  return fail('busy', 'the ingress did not take the key change')
}
