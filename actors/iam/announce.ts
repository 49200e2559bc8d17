/** @module Tells every ingress instance that an access key changed (revoked, replaced, its user
 * deactivated, demoted or deleted), and waits for their answers: until then an ingress may serve
 * the key from its cache, so the admin request that made the change returns only afterwards. A
 * dead ingress has no cache (a restart starts empty), so `unavailable` counts as done; while an
 * instance's mailbox is full the announcement is retried a few times (forgetting is idempotent,
 * so the instances that already took it take it again). */
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
    const answers = await ctx.callEach('http-ingress', {
      kind: 'ingress.forget-key',
      accessKey,
      generation,
      requestId,
      deadlineMs,
    })
    const refused = answers.filter((answer) => !answer.ok && answer.code !== 'unavailable')
    const failed = refused.find((answer) => !answer.ok && answer.code !== 'busy')
    if (refused.length === 0) return ok(null)
    if (failed !== undefined) return failed as Result<null>
    if (ctx.now() + RETRY_DELAY_MS >= deadlineMs) return refused[0] as Result<null>
    await new Promise<void>((resolve) => ctx.after(RETRY_DELAY_MS, resolve))
  }
  return fail('busy', 'the ingress did not take the key change')
}
