/** @module Replica.* calls of other nodes (cluster mode): a coordinator elsewhere sends an object
 * request to this replica. Replica.Op carries one without bytes, Replica.Write an object.put or
 * upload.part whose bytes come on the call's stream, Replica.Read an object.get (or a peer
 * scrubber's blob.read) whose bytes go back on it (the transport asks for the body's `range` once
 * the answer is ok). The transport checked the body against its method's schema, which allows each
 * method its own kinds (protocol/wire/replica.ts); the message then runs as a local one, with the
 * call's request id, deadline and stream. */
import type { AntiEntropyMsg } from '../../../protocol/anti-entropy.js'
import type { PeerRequestMsg } from '../../../protocol/cluster.js'
import { fail, ok, type Result } from '../../../protocol/errors.js'
import type { ObjectMsg, SystemMsg } from '../../../protocol/messages.js'
import type { BlobMsg } from '../../../protocol/scrubbing.js'
import type { ReplicaOp, ReplicaRead, ReplicaWrite } from '../../../protocol/wire/replica.js'

/** The local message a Replica.* call asks for, or why it is refused. */
export function replicaMessage(call: PeerRequestMsg): Result<ReplicaCallMsg> {
  const { msg } = call.body as ReplicaOp | ReplicaWrite | ReplicaRead
  const local = { ...msg, requestId: call.requestId, deadlineMs: call.deadlineMs }
  if (call.method === 'Replica.Op') return ok(local as ReplicaCallMsg)
  // The transport gives every call of a body rpc its stream.
  if (call.stream === undefined) return fail('invalid_request', `${call.method} needs a stream`)
  return ok({ ...local, stream: call.stream } as ReplicaCallMsg)
}

/** What a Replica.* call runs here: an object request, the store's figures, a blob's read, or
 * anti-entropy's questions. */
export type ReplicaCallMsg =
  | ObjectMsg
  | Extract<SystemMsg, { kind: 'system.stats' }>
  | Extract<BlobMsg, { kind: 'blob.read' }>
  | AntiEntropyMsg
