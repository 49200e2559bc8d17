/** @module The simulated network between nodes: `ctx.peers` of every simulated actor. A call is
 * an event after a random latency, handed to the actor that serves its method on the target node
 * (as grpc-ingress does, with the caller's id in `from` and the deadline on the target's clock),
 * and its answer another event after another latency. Bodies travel on the fake context's memory
 * streams (both ends one object). Faults, each set by the run:
 * - latency between `latencyMs` bounds, drawn per message, so messages overtake each other;
 * - loss: a request or its answer is lost and the caller sees `unavailable`, as a connection that
 *   broke (the handler may have run: the interesting case);
 * - duplication: a call without a body runs twice on the target (the second answer is dropped);
 * - partitions: calls between two cut nodes answer `unavailable`, both ways, until healed;
 * - a node's death: its calls in flight fail with `unavailable` on the other side, and the bodies
 *   it was sending or receiving fail with it.
 * The caller's own deadline bounds every call (`timeout`). Requests and answers cross as JSON and
 * are checked against their methods' schemas, as the gRPC transport checks them
 * (protocol/wire/peer-methods.ts): one that does not fit fails the call as it would there. */
import type {
  BodyRange,
  PeerMethod,
  PeerRequestMsg,
  PeerResult,
  Peers,
  PeerTarget,
} from '../../protocol/cluster.js'
import { fail, type Result } from '../../protocol/errors.js'
import { checkPeerAnswer, checkPeerRequest } from '../../protocol/wire/peer-methods.js'
import type { StreamHandle } from '../../protocol/actor.js'
import { servingActor } from '../../runtime/grpc-ingress-host.js'
import { memoryStream, type MemoryStream } from '../support/fake-context.js'
import type { SimRandom } from './random.js'
import type { Owner, Scheduler } from './scheduler.js'
import type { SimActorName, SimNode } from './sim-node.js'

export interface NetworkFaults {
  latencyMs: [number, number]
  lossRate: number
  duplicateRate: number
}

/** One call in flight, so a node's death can fail it. */
interface InFlight {
  from: string
  to: string
  fail: (code: 'unavailable', detail: string) => void
}

export class SimNetwork {
  private readonly nodes = new Map<string, SimNode>()
  private readonly cuts = new Set<string>()
  private readonly inFlight = new Set<InFlight>()
  faults: NetworkFaults = { latencyMs: [0.1, 1], lossRate: 0, duplicateRate: 0 }
  /** Calls made, lost and duplicated, for the run's report. */
  readonly counts = { calls: 0, lost: 0, duplicated: 0 }

  constructor(
    private readonly scheduler: Scheduler,
    private readonly random: SimRandom,
  ) {}

  add(node: SimNode): void {
    this.nodes.set(node.id, node)
  }

  /** Cuts every link between a node of `side` and a node outside it. */
  partition(side: readonly string[]): void {
    for (const one of this.nodes.keys()) {
      for (const other of this.nodes.keys()) {
        if (side.includes(one) !== side.includes(other)) this.cuts.add(`${one}|${other}`)
      }
    }
  }

  heal(): void {
    this.cuts.clear()
  }

  get partitioned(): boolean {
    return this.cuts.size > 0
  }

  /** Nodes cut off from `id`. */
  cutFrom(id: string): string[] {
    return [...this.nodes.keys()].filter((other) => this.cuts.has(`${id}|${other}`))
  }

  /** Fails every call in flight to or from a node that died. */
  nodeDied(id: string): void {
    for (const call of [...this.inFlight]) {
      if (call.to === id || call.from === id) call.fail('unavailable', `${id} died`)
    }
  }

  peersOf(caller: SimNode, owner: Owner): Peers {
    return {
      call: <T>(to: PeerTarget, method: PeerMethod, body: object, deadlineMs: number) =>
        this.send<T>(caller, owner, to, method, body, deadlineMs, null),
      openWrite: <T>(to: PeerTarget, method: PeerMethod, body: object, deadlineMs: number) => {
        const stream = memoryStream()
        const answer = this.send<T>(caller, owner, to, method, body, deadlineMs, {
          stream,
          direction: 'write',
        })
        return { sink: { ...stream.asSink(), copies: true as const }, answer }
      },
      callForBody: <T>(
        to: PeerTarget,
        method: PeerMethod,
        body: object & { range?: BodyRange },
        sink: StreamHandle,
        deadlineMs: number,
      ) =>
        this.send<T>(caller, owner, to, method, body, deadlineMs, {
          stream: sink as MemoryStream,
          direction: 'read',
          ...(body.range === undefined ? {} : { range: body.range }),
        }),
    }
  }

  private latency(): number {
    const [low, high] = this.faults.latencyMs
    return low + this.random.float() * (high - low)
  }

  private reachable(from: string, to: string): boolean {
    return !this.cuts.has(`${from}|${to}`)
  }

  private target(to: PeerTarget): SimNode | undefined {
    if (to.id !== null) return this.nodes.get(to.id)
    for (const node of this.nodes.values()) if (node.grpcAddr === to.grpcAddr) return node
    return undefined
  }

  private send<T>(
    caller: SimNode,
    owner: Owner,
    to: PeerTarget,
    method: PeerMethod,
    body: object,
    deadlineMs: number,
    body_: { stream: MemoryStream; direction: 'write' | 'read'; range?: BodyRange } | null,
  ): Promise<PeerResult<T>> {
    if (!owner.alive) return new Promise(() => undefined)
    this.counts.calls++
    const target = this.target(to)
    return new Promise((resolve) => {
      let settled = false
      const call: InFlight = {
        from: caller.id,
        to: target?.id ?? '?',
        fail: (code, detail) => settle(fail(code, detail), false),
      }
      const settle = (result: Result<unknown>, answered: boolean): void => {
        if (settled) return
        settled = true
        this.inFlight.delete(call)
        if (body_ !== null && !result.ok) {
          // The transport fails the body with its call, on both sides.
          if (body_.direction === 'write') body_.stream.cancel(result.code, result.detail)
          else body_.stream.abort(result.code, result.detail)
        } else if (body_ !== null && body_.direction === 'read' && body_.range !== undefined) {
          body_.stream.request(body_.range.start, body_.range.end)
        }
        if (!owner.alive) return
        const answer =
          answered && target !== undefined ? { ...result, answeredBy: target.id } : result
        resolve(answer as PeerResult<T>)
      }
      this.inFlight.add(call)
      // The caller's deadline, on virtual time.
      this.scheduler.after(Math.max(0, deadlineMs - caller.now()), () =>
        settle(fail('timeout', `${method} to ${to.id ?? to.grpcAddr} timed out`), false),
      )
      const refuse = (detail: string): void => {
        this.scheduler.after(this.latency(), () => settle(fail('unavailable', detail), false))
      }
      if (target === undefined) return refuse(`no node at ${to.grpcAddr}`)
      const request = checkPeerRequest(method, JSON.parse(JSON.stringify(body)))
      if (!request.ok) {
        this.scheduler.after(this.latency(), () =>
          settle(fail('invalid_argument', `${method}: ${request.issue}`), false),
        )
        return
      }
      if (!this.reachable(caller.id, target.id)) return refuse(`${target.id} is partitioned`)
      if (this.random.chance(this.faults.lossRate)) {
        this.counts.lost++
        return refuse(`the call to ${target.id} was lost`)
      }
      const loseAnswer = this.random.chance(this.faults.lossRate)
      const copies = body_ === null && this.random.chance(this.faults.duplicateRate) ? 2 : 1
      if (copies === 2) this.counts.duplicated++
      for (let copy = 0; copy < copies; copy++) {
        this.scheduler.after(this.latency(), () => {
          if (!target.up || !this.reachable(caller.id, target.id)) {
            if (copy === 0) settle(fail('unavailable', `${target.id} is down`), false)
            return
          }
          const msg: PeerRequestMsg = {
            kind: 'peer.request',
            requestId: `peer-${this.counts.calls}`,
            // gRPC sends a deadline as a duration, which the target counts on its own clock.
            deadlineMs: deadlineMs - caller.now() + target.now(),
            method,
            from: caller.id,
            body: request.value,
            ...(body_ === null ? {} : { stream: body_.stream.handle }),
          }
          const actor = servingActor(method) as SimActorName
          void target.deliver(actor, msg, target.life).then((result) => {
            if (copy > 0) return
            this.scheduler.after(this.latency(), () => {
              if (loseAnswer) {
                this.counts.lost++
                settle(fail('unavailable', `the answer of ${target.id} was lost`), false)
              } else settle(answerOf(method, body, result), true)
            })
          })
        })
      }
    })
  }
}

/** A handler's Result as the caller's transport would take it: as JSON, checked against the
 * schema of what `request` asked; one that does not fit is `unavailable`. */
function answerOf(method: PeerMethod, request: object, result: Result<unknown>): Result<unknown> {
  const checked = checkPeerAnswer(method, request, JSON.parse(JSON.stringify(result)))
  if (checked.ok) return checked.value
  return fail('unavailable', `${method}: answered malformed: ${checked.issue}`)
}
