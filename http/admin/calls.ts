/** @module The admin API's requests to actors: iam for identities, the coordinator for buckets
 * and objects. Each carries the admin request's id and the usual deadline, and its reply is typed
 * by the message kind. */
import { objectActor, type Mesh } from '../../protocol/actor.js'
import type { Result } from '../../protocol/errors.js'
import type {
  IamMsg,
  IamReply,
  ObjectMsg,
  ObjectReply,
  Unaddressed,
} from '../../protocol/messages.js'
import { CALL_TIMEOUT_MS } from '../../protocol/timing.js'
import type { AdminContext } from './exchange.js'

export function askIam<K extends IamMsg['kind']>(
  c: AdminContext,
  mesh: Mesh,
  msg: { kind: K } & Unaddressed<Extract<IamMsg, { kind: K }>>,
): Promise<Result<IamReply[K]>> {
  const request = { ...msg, requestId: c.get('requestId'), deadlineMs: deadline(mesh) }
  // The spread of a generic message is not seen as the message it is: its kind's reply is.
  return mesh.call('iam', request as IamMsg) as Promise<Result<IamReply[K]>>
}

export function askCoordinator<K extends ObjectMsg['kind']>(
  c: AdminContext,
  mesh: Mesh,
  msg: { kind: K } & Unaddressed<Extract<ObjectMsg, { kind: K }>>,
): Promise<Result<ObjectReply[K]>> {
  const request = { ...msg, requestId: c.get('requestId'), deadlineMs: deadline(mesh) }
  return mesh.call(objectActor(mesh.config), request as ObjectMsg) as Promise<
    Result<ObjectReply[K]>
  >
}

function deadline(mesh: Mesh): number {
  return mesh.now() + CALL_TIMEOUT_MS
}
