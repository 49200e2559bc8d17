/** @module One request to one replica: to this node's store as a message, to another node's store
 * over `ctx.peers` (Replica.Op without a body, Replica.Write with one, Replica.Read for one). The
 * message is the store's own (ObjectMsg), so a remote replica runs exactly what the local one
 * does. Every call is bounded by the request's deadline. */
import type { ByteSink, ByteSource, Context } from '../../protocol/actor.js'
import type { AntiEntropyMsg } from '../../protocol/anti-entropy.js'
import type { BodyRange } from '../../protocol/cluster.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import type { GetResult, ObjectMsg, SystemMsg } from '../../protocol/messages.js'
import type { Replica } from './replicas.js'

/** A message for a replica: an object request without its inline body or stream, the store's
 * figures, or anti-entropy's questions. */
export type ReplicaMsg = ObjectMsg | Extract<SystemMsg, { kind: 'system.stats' }> | AntiEntropyMsg

/** Sends `msg` (no body, no stream) and waits for the replica's answer. */
export function askReplica<T>(ctx: Context, replica: Replica, msg: ReplicaMsg): Promise<Result<T>> {
  // The reply a caller names is the one its message's kind gets (the store's protocol), locally
  // as from a peer, whose answer comes as JSON.
  if (replica.local) return ctx.call('replica-store', msg) as Promise<Result<T>>
  return ctx.peers.call<T>(replica.target, 'Replica.Op', { msg }, msg.deadlineMs)
}

/** A write whose body the caller sends on `sink`: the replica's answer comes once it committed
 * (or refused) what the sink carried. */
export interface ReplicaWrite<T> {
  replica: Replica
  sink: ByteSink
  answer: Promise<Result<T>>
}

/** Starts a write of a body (object.put, upload.part): the message goes now, the bytes follow on
 * the returned sink: a stream port to the local store (its writes transfer the chunk), the
 * transport's own sink to a remote one (its writes copy the chunk, in this thread). */
export function writeToReplica<T>(
  ctx: Context,
  replica: Replica,
  msg: Extract<ObjectMsg, { kind: 'object.put' | 'upload.part' }>,
): ReplicaWrite<T> {
  const { body: _inline, stream: _stream, ...head } = msg
  if (!replica.local) {
    const write = ctx.peers.openWrite<T>(
      replica.target,
      'Replica.Write',
      { msg: head },
      msg.deadlineMs,
    )
    return { replica, ...write }
  }
  const [mine, theirs] = ctx.openStream()
  const answer = ctx.call('replica-store', { ...head, stream: theirs }) as Promise<Result<T>>
  return { replica, sink: ctx.sink(mine, msg.deadlineMs), answer }
}

/** Reads a version's bytes `range` from a replica: its answer (the head) first, then the bytes on
 * the returned source. */
export function readFromReplica<T>(
  ctx: Context,
  replica: Replica,
  msg: Extract<ObjectMsg, { kind: 'object.get' }>,
  range: BodyRange,
): { answer: Promise<Result<T>>; source: ByteSource } {
  const [mine, theirs] = ctx.openStream()
  const { stream: _stream, inline: _inline, ...head } = msg
  let answer: Promise<Result<T>>
  if (replica.local) {
    answer = ctx.call('replica-store', { ...head, stream: theirs }) as Promise<Result<T>>
  } else {
    answer = ctx.peers.callForBody<T>(
      replica.target,
      'Replica.Read',
      { msg: head, range } as object & { range: BodyRange },
      theirs,
      msg.deadlineMs,
    )
  }
  const source = ctx.source(mine, msg.deadlineMs)
  // A local store streams once asked; a remote one was asked with the call.
  if (replica.local) source.request(range.start, range.end)
  return { answer, source }
}

/** A read's bytes: a stream, or the bytes themselves when the local store answered with them (a
 * blob small enough to be kept inline comes with the answer, not on the stream). */
export type ReadBytes = { source: ByteSource } | { body: Uint8Array }

/** Reads `range` of an object version from a replica; `expected` checks its head (the version
 * the caller found must still be the one read). */
export async function readRange(
  ctx: Context,
  replica: Replica,
  msg: Extract<ObjectMsg, { kind: 'object.get' }>,
  range: BodyRange,
  expected: (head: GetResult) => boolean,
): Promise<Result<ReadBytes>> {
  const read = readFromReplica<GetResult>(ctx, replica, msg, range)
  const head = await read.answer
  if (!head.ok || !expected(head.value)) {
    read.source.cancel('unavailable', 'the version read changed')
    return head.ok ? fail('unavailable', 'the version read changed while it was read') : head
  }
  const body = head.value.body
  if (body === undefined) return ok({ source: read.source })
  read.source.cancel('unavailable', 'the bytes came with the answer')
  return ok({ body: body.subarray(range.start, range.end + 1) })
}
