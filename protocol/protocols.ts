/** @module One protocol map per actor, `kind → [message, reply]`, derived from the actor's message
 * union and its reply map (each defined once, beside its messages). `Context.call` takes the reply
 * type from the target's map, and an actor's handler table must cover its map exactly, so neither
 * a call site nor a handler names a reply type of its own. */
import type { LifecycleMsg, LifecycleReply } from './lifecycle.js'
import type { Request } from './actor.js'
import type { AntiEntropyActorMsg, AntiEntropyActorReply } from './anti-entropy.js'
import type { AntiEntropyMsg, AntiEntropyReply } from './anti-entropy.js'
import type { PeerAnswer, PeerRequestMsg } from './cluster.js'
import type { Result } from './errors.js'
import type { GossiperMsg, GossiperReply } from './membership.js'
import type { CoordinatorMsg, CoordinatorReply, HintQueueMsg, HintQueueReply } from './messages.js'
import type { IamMsg, IamReply, IngressMsg, IngressReply } from './messages.js'
import type { ObjectMsg, ObjectReply, SystemMsg, SystemReply } from './messages.js'
import type { BlobMsg, BlobReply, ScrubberMsg, ScrubberReply } from './scrubbing.js'

/** `kind → [message, reply]`: each kind an actor takes, its message and what it answers. */
export type Protocol = { [kind: string]: readonly [{ kind: string }, unknown] }

/** The map of a message union and a reply map naming a reply for each of its kinds. */
export type ProtocolOf<Msg extends { kind: string }, Reply extends Record<Msg['kind'], unknown>> = {
  [K in Msg['kind']]: [Extract<Msg, { kind: K }>, Reply[K]]
}

export type StoreProtocol = ProtocolOf<
  ObjectMsg | SystemMsg | BlobMsg | AntiEntropyMsg | PeerRequestMsg,
  ObjectReply & SystemReply & BlobReply & AntiEntropyReply & { 'peer.request': PeerAnswer }
>
export type CoordinatorProtocol = ProtocolOf<CoordinatorMsg, CoordinatorReply>
export type IamProtocol = ProtocolOf<IamMsg, IamReply>
export type GossiperProtocol = ProtocolOf<GossiperMsg, GossiperReply>
export type HintQueueProtocol = ProtocolOf<HintQueueMsg, HintQueueReply>
export type ScrubberProtocol = ProtocolOf<ScrubberMsg, ScrubberReply>
export type AntiEntropyProtocol = ProtocolOf<AntiEntropyActorMsg, AntiEntropyActorReply>
export type LifecycleProtocol = ProtocolOf<LifecycleMsg, LifecycleReply>
export type IngressProtocol = ProtocolOf<IngressMsg, IngressReply>
/** grpc-ingress takes no request of another actor: it hands peers' calls to them. */
export type GrpcIngressProtocol = Record<never, never>

/** Every actor's protocol, by the actor's name. */
export type Protocols = {
  'replica-store': StoreProtocol
  coordinator: CoordinatorProtocol
  iam: IamProtocol
  gossiper: GossiperProtocol
  'hint-queue': HintQueueProtocol
  scrubber: ScrubberProtocol
  'anti-entropy': AntiEntropyProtocol
  lifecycle: LifecycleProtocol
  'http-ingress': IngressProtocol
  'grpc-ingress': GrpcIngressProtocol
}

/** The kinds `To` takes (of several actors: the kinds every one of them takes). */
export type KindOf<To extends keyof Protocols> = keyof Protocols[To] & string

/** The message of kind `K` to `To`. */
export type MessageOf<
  To extends keyof Protocols,
  K extends KindOf<To>,
> = Protocols[To][K] extends readonly [infer Msg extends Request & { kind: string }, unknown]
  ? Msg
  : never

/** What `To` answers a message of kind `K`. */
export type ReplyOf<
  To extends keyof Protocols,
  K extends KindOf<To>,
> = Protocols[To][K] extends readonly [unknown, infer Reply] ? Reply : never

/** Every message `To` takes. */
export type MessageTo<To extends keyof Protocols> = MessageOf<To, KindOf<To>>

/** What a handler returns: its kind's reply, now or later. */
export type Handled<Reply> = Result<Reply> | Promise<Result<Reply>>
