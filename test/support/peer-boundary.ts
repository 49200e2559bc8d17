/** @module A peer's request as the gRPC server admits it, for tests that hand calls to an actor
 * directly: its body crosses as JSON and must fit its method's schema
 * (protocol/wire/peer-methods.ts). One that does not is refused `invalid_argument`, as its caller
 * would see it, and never reaches the actor. */
import type { PeerMethod } from '../../protocol/cluster.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import { checkPeerRequest } from '../../protocol/wire/peer-methods.js'
import type { StoreBody, TestStore } from './store-harness.js'

/** The body the serving actor gets, or the refusal its caller gets. */
export function admitPeerBody(method: PeerMethod, body: unknown): Result<unknown> {
  const checked = checkPeerRequest(method, JSON.parse(JSON.stringify(body ?? null)))
  return checked.ok ? ok(checked.value) : fail('invalid_argument', checked.issue)
}

/** A call of node n2 to `store`, as grpc-ingress hands it over once the server admitted it. */
export async function fromPeer<T>(
  store: TestStore,
  method: PeerMethod,
  body: unknown,
  stream?: unknown,
): Promise<Result<T>> {
  const admitted = admitPeerBody(method, body)
  if (!admitted.ok) return admitted
  const streamed = stream === undefined ? {} : { stream }
  const call = { kind: 'peer.request', method, from: 'n2', body: admitted.value, ...streamed }
  return store.send<T>(call as StoreBody)
}
