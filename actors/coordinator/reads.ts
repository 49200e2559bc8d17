/** @module Quorum reads (CLUSTER.md section 5): a stamped head goes to R of the key's replicas (the
 * local store first); the answer with the newest key stamp wins, whether an object, a delete
 * marker or nothing (a tombstone), so a deleted key reads as deleted even from a replica that
 * missed the delete. The bytes come from the winner: this node's store when it holds the winning
 * change, else another node: streamed through here, or (a `direct` read) read by the ingress
 * itself from the node this answer names (GetResult.readFrom). Replicas that answered an older
 * key stamp are repaired in the background (repair.ts).
 *
 * A corrupt copy never wins a read of bytes once its store knows it (the store answers `corrupt`
 * before any byte, and a quorum read counts that replica as failed). A relayed read whose replica
 * fails before the first byte (a copy found corrupt as it was read, a replica gone) takes the same
 * version from the next replica that holds it, its key stamp equal; the corrupt node's store has
 * told its own scrubber to heal the copy. Once bytes went, a failure can only cut the stream. */
import type { Context } from '../../protocol/actor.js'
import { fail, ok, ServiceError, type ErrorCode, type Result } from '../../protocol/errors.js'
import type { AbsentResult, GetResult, MarkerResult, ObjectMsg } from '../../protocol/messages.js'
import type { ClusterState } from './cluster-state.js'
import { askInTurn, quorumFailure, unreachable } from './quorum.js'
import { askReplica, readFromReplica } from './replica-calls.js'
import { repairStale } from './repair.js'
import { replicasOf, type Replica } from './replicas.js'

export type GetMsg = Extract<ObjectMsg, { kind: 'object.get' }>
export type StampedAnswer = GetResult | MarkerResult | AbsentResult

export interface ReplicaAnswer {
  replica: Replica
  answer: StampedAnswer
}

export interface QuorumRead {
  winner: ReplicaAnswer
  answers: ReplicaAnswer[]
}

function keyStampOf(answer: StampedAnswer): string {
  return answer.keyStamp ?? ''
}

/** Whether `a` is newer than `b`: the key's stamp (its versions and deletions), then, of one
 * version, the stamp of its newest attribute change, which leaves the key's stamp as it is. */
export function newerAnswer(a: StampedAnswer, b: StampedAnswer): boolean {
  const [aKey, bKey] = [keyStampOf(a), keyStampOf(b)]
  if (aKey !== bKey) return aKey > bKey
  return changeOf(a) > changeOf(b)
}

function changeOf(answer: StampedAnswer): string {
  return 'changeStamp' in answer ? (answer.changeStamp ?? '') : ''
}

/** Asks R replicas for the key's state; the newest wins (ties go to the local store). */
export async function readQuorum(
  cluster: ClusterState,
  ctx: Context,
  msg: GetMsg,
  replicas: readonly Replica[],
): Promise<Result<QuorumRead>> {
  const need = cluster.settings.readQuorum
  if (replicas.length < need) return unreachable('read', replicas.length, need)
  const { stream: _stream, inline: _inline, ...head } = msg
  const gathered = await askInTurn(
    replicas,
    need,
    (replica) => {
      // Only the local store sends a small body with its answer: a remote one is streamed.
      const inline = replica.local && msg.inline === true ? { inline: true as const } : {}
      return askReplica<StampedAnswer>(ctx, replica, { ...head, ...inline, stamped: true })
    },
    (ms, task) => ctx.after(ms, task),
  )
  if (gathered.oks.length < need) return quorumFailure('read', gathered, need)
  const answers = gathered.oks.map(({ index, value }) => ({
    replica: replicas[index] as Replica,
    answer: value,
  }))
  let winner = answers[0] as ReplicaAnswer
  for (const candidate of answers) {
    const newer = newerAnswer(candidate.answer, winner.answer)
    const tieLocal = !newerAnswer(winner.answer, candidate.answer) && candidate.replica.local
    if (newer || tieLocal) winner = candidate
  }
  cluster.counters.quorumReads++
  return ok({ winner, answers })
}

/** The client's answer for a winner: an object, a marker, or no such key or version. */
export function clientAnswer(msg: GetMsg, answer: StampedAnswer): Result<GetResult | MarkerResult> {
  if ('absent' in answer) {
    if (msg.versionId !== undefined) {
      return fail('no_such_version', `no version ${msg.versionId} of ${msg.key}`)
    }
    return fail('no_such_key', `no key ${msg.key} in ${msg.bucket}`)
  }
  const { keyStamp: _keyStamp, ...rest } = answer
  if ('changeStamp' in rest) delete rest.changeStamp
  return ok(rest)
}

/** object.get in cluster mode. */
export async function getObject(
  cluster: ClusterState,
  ctx: Context,
  msg: GetMsg,
): Promise<Result<GetResult | MarkerResult>> {
  const read =
    (msg.stream === undefined ? null : followUp(cluster, ctx, msg)) ??
    (await quorumRead(cluster, ctx, msg))
  if (!read.ok) return cancelStream(ctx, msg, read)
  const { winner } = read.value
  const answer = clientAnswer(msg, winner.answer)
  if (!answer.ok || 'marker' in answer.value || msg.stream === undefined) {
    if (
      answer.ok &&
      'info' in answer.value &&
      msg.inline === true &&
      answer.value.body === undefined
    ) {
      remember(cluster, ctx, msg, winner)
    }
    return cancelStream(ctx, msg, answer)
  }
  if (winner.replica.local) {
    // This node's store holds the newest change: it answers and streams as on a single node.
    // Not `stamped`: the store answers what it holds, never AbsentResult.
    const { direct: _direct, ...local } = msg
    return ctx.call('replica-store', local) as Promise<Result<GetResult | MarkerResult>>
  }
  const { body: _body, ...head } = answer.value
  const pinned = pinnedRead(msg, winner)
  if (msg.direct === true) {
    // The ingress reads the other node's bytes itself: no second relay through this thread.
    const { direct: _direct, ...read } = pinned
    const readFrom = { target: winner.replica.target, msg: read, keyStamp: winner.answer.keyStamp }
    return cancelStream(ctx, msg, ok({ ...head, readFrom }))
  }
  void relayBody(cluster, ctx, msg, winner, pinned)
  return ok(head)
}

async function quorumRead(
  cluster: ClusterState,
  ctx: Context,
  msg: GetMsg,
): Promise<Result<QuorumRead>> {
  const set = await replicasOf(cluster, ctx, msg, msg.deadlineMs)
  if (!set.ok) return set
  const read = await readQuorum(cluster, ctx, msg, set.value.reachable)
  if (read.ok) repairStale(cluster, ctx, msg, read.value.winner, read.value.answers)
  return read
}

/** A GET of a large object is two requests of the ingress with one request id: a first look
 * (`inline`), then the read with a stream. The second takes the first's quorum decision instead
 * of asking R replicas again: the read happened at the first, as a single read would. */
function remember(cluster: ClusterState, ctx: Context, msg: GetMsg, winner: ReplicaAnswer): void {
  if (cluster.firstLooks.size >= FIRST_LOOKS_MAX) cluster.firstLooks.clear()
  cluster.firstLooks.set(msg.requestId, { at: lookKey(msg), winner, atMs: ctx.now() })
}

function followUp(cluster: ClusterState, ctx: Context, msg: GetMsg): Result<QuorumRead> | null {
  const look = cluster.firstLooks.get(msg.requestId)
  if (look === undefined) return null
  // A direct read's ingress may still ask for a relay (its read of the node failed): the decision
  // serves that third request too, until it expires.
  if (msg.direct !== true) cluster.firstLooks.delete(msg.requestId)
  if (look.at !== lookKey(msg) || ctx.now() - look.atMs > FIRST_LOOK_TTL_MS) return null
  return ok({ winner: look.winner, answers: [look.winner] })
}

function lookKey(msg: GetMsg): string {
  return JSON.stringify([msg.bucket, msg.key, msg.versionId ?? null, msg.partNumber ?? null])
}

/** First looks kept at once, and how long one serves its second request. */
const FIRST_LOOKS_MAX = 10_000
const FIRST_LOOK_TTL_MS = 5_000

/** The read of the winner's bytes names what the head answered: its version when it has one, and
 * its key stamp, checked when the bytes come (a change in between fails the stream). */
function pinnedRead(msg: GetMsg, winner: ReplicaAnswer): GetMsg {
  const { stream: _stream, inline: _inline, ...rest } = msg
  const answer = winner.answer as GetResult
  const versionId = answer.info.versionId
  return { ...rest, ...(versionId === undefined ? {} : { versionId }), stamped: true }
}

/** Streams the bytes the ingress asks for to the ingress's stream, from the winning replica, or
 * when it fails before the first byte, from the next replica holding the same version. */
async function relayBody(
  cluster: ClusterState,
  ctx: Context,
  msg: GetMsg,
  winner: ReplicaAnswer,
  pinned: GetMsg,
): Promise<void> {
  const sink = ctx.sink(msg.stream as object, msg.deadlineMs)
  const range = await sink.demand().catch(() => null)
  if (range === null) return
  const tried = new Set<string>()
  let holder: Replica | null = winner.replica
  let failure: RelayFailure = { started: false, code: 'unavailable', detail: 'no replica' }
  while (holder !== null) {
    tried.add(holder.id)
    const relayed = await relayFrom(ctx, holder, pinned, range, winner.answer.keyStamp, sink)
    if (relayed === null) return
    failure = relayed
    if (failure.started) break
    ctx.log.warn({ replica: holder.id, code: failure.code }, 'a replica failed a read: next one')
    holder = await nextHolder(cluster, ctx, msg, tried)
  }
  sink.abort(failure.code, failure.detail)
}

/** Why a relay from one replica failed, and whether bytes had gone to the ingress already. */
interface RelayFailure {
  started: boolean
  code: ErrorCode
  detail: string
}

/** Relays `range` from one replica; null once every byte went and the stream ended. */
async function relayFrom(
  ctx: Context,
  holder: Replica,
  pinned: GetMsg,
  range: { start: number; end: number },
  keyStamp: string | null | undefined,
  sink: ReturnType<Context['sink']>,
): Promise<RelayFailure | null> {
  const { answer, source } = readFromReplica<StampedAnswer>(ctx, holder, pinned, range)
  const head = await answer
  if (!head.ok || 'absent' in head.value || head.value.keyStamp !== keyStamp) {
    const detail = head.ok ? 'the object changed while it was read' : head.detail
    source.cancel('unavailable', detail)
    return { started: false, code: head.ok ? 'unavailable' : relayCode(head.code), detail }
  }
  // The local store answers a small body with its head, and sends nothing on the stream.
  const body = 'info' in head.value ? head.value.body : undefined
  if (body !== undefined) {
    source.cancel('unavailable', 'the bytes came with the answer')
    try {
      await sink.write(body.slice(range.start, range.end + 1))
      sink.end()
      return null
    } catch (error) {
      return { started: true, code: 'unavailable', detail: String(error) }
    }
  }
  let started = false
  try {
    for (;;) {
      const chunk = await source.next()
      if (chunk === null) break
      started = true
      await sink.write(chunk)
    }
    sink.end()
    return null
  } catch (error) {
    const detail = `relaying a replica's bytes failed: ${String(error)}`
    source.cancel('unavailable', detail)
    const code = error instanceof ServiceError ? relayCode(error.code) : 'unavailable'
    return { started, code, detail }
  }
}

/** What the ingress is told of a relay's failure: a corrupt copy as such (it answers 500, or
 * reads again), anything else as a replica unavailable (503, which a client retries). */
function relayCode(code: ErrorCode): ErrorCode {
  return code === 'corrupt' || code === 'timeout' ? code : 'unavailable'
}

/** A reachable replica of the key not tried yet, or null. */
async function nextHolder(
  cluster: ClusterState,
  ctx: Context,
  msg: GetMsg,
  tried: ReadonlySet<string>,
): Promise<Replica | null> {
  const set = await replicasOf(cluster, ctx, msg, msg.deadlineMs)
  if (!set.ok) return null
  return set.value.reachable.find((replica) => !tried.has(replica.id)) ?? null
}

/** A GET answered without this node's bytes: the ingress's stream gets none. */
function cancelStream<T>(ctx: Context, msg: GetMsg, result: Result<T>): Result<T> {
  if (msg.stream !== undefined) ctx.sink(msg.stream, msg.deadlineMs).abort('unavailable', 'no body')
  return result
}
