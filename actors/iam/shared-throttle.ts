/** @module Login throttling across a cluster. A failed login counts on every storage node, not
 * only on the one that checked the password, so a user throttled on n1 is throttled on n2 as well,
 * and a gateway, which spreads attempts over the nodes, lets through as many as one node would.
 * The node that checked the password tells every other Alive or Suspect storage node
 * (Iam.LoginOutcome) and waits for their answers before its own, so the client's next attempt
 * meets the count wherever it lands; a success that cleared failures is told likewise. Gateways
 * hold no identities: they forward logins to nodes and count nothing. The cost is one call per
 * storage node per failed login, each bounded by NOTICE_MS; failed logins are already paced by
 * their argon2 verification and by the throttle itself. Attempts made at the same moment on two
 * nodes may both pass before either hears of the other: sequential ones are counted exactly.
 *
 * A peer that does not answer in time is skipped: toward peers the throttle fails open. It slows
 * guessing, the password remains the check, and an unreachable node cannot be asked anyway.
 * Failing closed would turn one node down, or a partition, into a lockout of every administrator
 * from every node, when the admin API is most needed; failing open lets a guesser who reaches
 * nodes that cannot reach each other make at most the per-node limit of guesses on each, as
 * before. A node that restarts starts with empty counts, as a single node does. */
import type { Context, Request } from '../../protocol/actor.js'
import type { PeerRequestMsg } from '../../protocol/cluster.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import type { LoginOutcome } from '../../protocol/identity.js'
import type { MembershipView } from '../../protocol/membership.js'
import type { IamState } from './iam-state.js'
import { recordFailure, recordSuccess } from './throttle.js'

/** How long a login waits for the other nodes to take its outcome, within its own deadline. */
const NOTICE_MS = 1_000

/** Tells the other storage nodes of a cluster a login's outcome; a single node has none. */
export async function shareLoginOutcome(
  ctx: Context,
  outcome: LoginOutcome,
  request: Request,
): Promise<void> {
  if (ctx.config['SVC_MODE'] !== 'cluster') return
  const deadlineMs = Math.min(request.deadlineMs, ctx.now() + NOTICE_MS)
  const view = await ctx.call('gossiper', {
    kind: 'membership.view',
    requestId: request.requestId,
    deadlineMs,
  })
  if (!view.ok) {
    ctx.log.warn({ code: view.code, detail: view.detail }, 'login outcome not shared: no view')
    return
  }
  const self = view.value.self.id
  const peers = view.value.members.filter(
    (member) =>
      member.kind === 'node' &&
      member.id !== self &&
      (member.status === 'Alive' || member.status === 'Suspect'),
  )
  const answers = await Promise.all(
    peers.map((member) =>
      ctx.peers.call<null>(
        { id: member.id, grpcAddr: member.grpcAddr },
        'Iam.LoginOutcome',
        outcome,
        deadlineMs,
      ),
    ),
  )
  const missed = peers.filter((_, index) => answers[index]?.ok !== true).map(({ id }) => id)
  if (missed.length > 0) ctx.log.warn({ missed }, 'login outcome not taken by every node')
}

/** Iam.LoginOutcome from another node: counted here as if the login had been made here. */
export function takeLoginOutcome(state: IamState, msg: PeerRequestMsg, ctx: Context): Result<null> {
  if (msg.method !== 'Iam.LoginOutcome') {
    return fail('invalid_request', `iam does not serve ${msg.method}`)
  }
  // The transport checked the body against its schema (protocol/wire/iam.ts).
  const outcome = msg.body as LoginOutcome
  if (outcome.failed) recordFailure(state.throttle, outcome.username, outcome.address, ctx.now())
  else recordSuccess(state.throttle, outcome.username)
  return ok(null)
}
