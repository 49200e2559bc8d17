/** @module The schema of every node-to-node method's request and answer, and the checks the
 * transport runs with them: a request a node receives before it becomes a local message, an answer
 * before the caller sees it (runtime/cluster/grpc-server.ts, body-server.ts, grpc-peers.ts; the
 * simulator's network the same). What a check lets through is the parsed value, so a handler
 * reads a body as its method's type. A Replica.* answer's schema is its request's kind's. */
import { z } from 'zod'
import type { PeerMethod } from '../cluster.js'
import { isErrorCode, type ErrorCode, type Result } from '../errors.js'
import {
  catalogApplied,
  catalogApply,
  catalogClaim,
  catalogClaimAnswer,
  catalogSnapshotPage,
  catalogSnapshotRequest,
} from './catalog.js'
import { gossipEnvelope, pingReqAnswer, pingReqBody, pushPullBody } from './gossip.js'
import { loginOutcome } from './iam.js'
import { REPLICA_ANSWERS, type ReplicaKind } from './replica-answers.js'
import { replicaOp, replicaRead, replicaWrite } from './replica.js'

/** Each method's request. */
export const PEER_REQUESTS = {
  'Membership.Ping': gossipEnvelope,
  'Membership.PingReq': pingReqBody,
  'Membership.PushPull': pushPullBody,
  'Membership.Leave': gossipEnvelope,
  'Catalog.Apply': catalogApply,
  'Catalog.Snapshot': catalogSnapshotRequest,
  'Catalog.Claim': catalogClaim,
  'Catalog.Release': catalogClaim,
  'Iam.LoginOutcome': loginOutcome,
  'Replica.Op': replicaOp,
  'Replica.Write': replicaWrite,
  'Replica.Read': replicaRead,
} as const satisfies Record<PeerMethod, z.ZodType>

/** Each method's ok answer; Replica.* answer as their request's kind does (REPLICA_ANSWERS). */
const ANSWERS: Record<Exclude<PeerMethod, `Replica.${string}`>, z.ZodType> = {
  'Membership.Ping': gossipEnvelope,
  'Membership.PingReq': pingReqAnswer,
  'Membership.PushPull': pushPullBody,
  'Membership.Leave': gossipEnvelope,
  'Catalog.Apply': catalogApplied,
  'Catalog.Snapshot': catalogSnapshotPage,
  'Catalog.Claim': catalogClaimAnswer,
  'Catalog.Release': z.null(),
  'Iam.LoginOutcome': z.null(),
}

export type PeerRequest<M extends PeerMethod> = z.infer<(typeof PEER_REQUESTS)[M]>

/** A handler's failure as it crosses: its code, detail, and when the caller may try again. A peer
 * of another build may name a code this one lacks: a fault here, `internal`, with the code it
 * sent kept in the detail (each surface maps only the codes of this build). */
const failure = z
  .strictObject({
    ok: z.literal(false),
    code: z.string().min(1),
    detail: z.string(),
    retryAfterSecs: z.number().exactOptional(),
  })
  .transform(({ code, detail, ...rest }) => {
    const known: ErrorCode = isErrorCode(code) ? code : 'internal'
    return { ...rest, code: known, detail: known === code ? detail : `${code}: ${detail}` }
  })

/** A check's verdict: the parsed value, or the first issue, as `path: message` (the path of a
 * whole request is `(body)`, of an answer's fields under `value` or the failure's). */
export type WireCheck<T> = { ok: true; value: T } | { ok: false; issue: string }

function verdict<T>(parsed: z.ZodSafeParseResult<T>, under: string[] = []): WireCheck<T> {
  if (parsed.success) return { ok: true, value: parsed.data }
  const first = parsed.error.issues[0]
  const path = [...under, ...(first?.path ?? []).map(String)]
  const where = path.length === 0 ? '(body)' : path.join('.')
  return { ok: false, issue: `${where}: ${first?.message ?? 'malformed'}` }
}

/** Checks a request a node received for `method`. */
export function checkPeerRequest(method: PeerMethod, body: unknown): WireCheck<unknown> {
  const schema: z.ZodType = PEER_REQUESTS[method]
  return verdict(schema.safeParse(body))
}

/** Checks the Result a peer answered to `request` (ours, so it needs no check). JSON drops an
 * undefined value, so `ok(undefined)` arrives as `{ ok: true }`: its value is null. */
export function checkPeerAnswer(
  method: PeerMethod,
  request: unknown,
  answer: unknown,
): WireCheck<Result<unknown>> {
  if (typeof answer !== 'object' || answer === null || !('ok' in answer)) {
    return { ok: false, issue: '(body): not a Result' }
  }
  if (answer.ok !== true) return verdict(failure.safeParse(answer))
  const value = 'value' in answer ? answer.value : null
  const checked = verdict(answerSchema(method, request).safeParse(value), ['value'])
  return checked.ok ? { ok: true, value: { ok: true, value: checked.value } } : checked
}

function answerSchema(method: PeerMethod, request: unknown): z.ZodType {
  switch (method) {
    case 'Replica.Op':
    case 'Replica.Write':
    case 'Replica.Read':
      return REPLICA_ANSWERS[(request as { msg: { kind: ReplicaKind } }).msg.kind]
    default:
      return ANSWERS[method]
  }
}
