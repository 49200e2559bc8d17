/** @module Links: request/reply over a MessagePort between two actors. A link is directed: the
 * caller end sends requests and awaits replies, the serving end hands them to its actor. Every call
 * has a deadline and a bounded number of calls may be outstanding; a link that closes (its peer
 * died or was rewired) fails its pending calls at once with `unavailable`, so callers fail fast.
 * A request that is never posted (the link closed, too many calls, its deadline passed, it cannot
 * be cloned) closes the stream ports it carries, so the stream's other end fails at once too.
 * Envelopes posted in one turn of the event loop travel as one message (an Outbox): each message
 * wakes the receiving thread and is an event there, which under load was a quarter of the
 * coordinator's and the store's CPU. */
import assert from 'node:assert/strict'
import type { MessagePort } from 'node:worker_threads'
import { fail, type ErrorCode, type Result } from '../protocol/errors.js'
import { PENDING_CALLS_MAX } from './knobs.js'
import { closeUndelivered, transferablesOf } from './transfer.js'

export type Envelope =
  | { t: 'req'; id: number; msg: { kind: string; deadlineMs: number } }
  | { t: 'res'; id: number; result: Result<unknown> }

/** One port message: the envelopes one turn of the sender's event loop posted, in order. */
export type Batch = Envelope[]

type Transferables = (ArrayBuffer | MessagePort)[]

/** Collects envelopes and posts them together at the end of the current turn (setImmediate: after
 * the I/O callbacks that produced them, before the loop waits again). Its length is bounded by
 * what may be outstanding: PENDING_CALLS_MAX requests on a caller end, MAILBOX_DEPTH_MAX replies on
 * a serving end. A batch that cannot be posted (a body that cannot be cloned) is posted envelope
 * by envelope, so only the offending one fails. */
class Outbox {
  private batch: Batch = []
  private transfers: Transferables = []
  /** Set when the link closes: what is still queued will never be delivered. */
  private closed = false

  constructor(
    private readonly port: MessagePort,
    private readonly onUnsent: (envelope: Envelope, error: unknown) => void,
  ) {}

  post(envelope: Envelope, transfers: Transferables): void {
    if (this.closed) {
      closeUndelivered(envelopeContent(envelope))
      return
    }
    if (this.batch.length === 0) setImmediate(() => this.flush())
    this.batch.push(envelope)
    for (const transfer of transfers) this.transfers.push(transfer)
  }

  /** Drops what is queued, closing the streams it carries: the link is gone. */
  close(): void {
    this.closed = true
    for (const envelope of this.batch) closeUndelivered(envelopeContent(envelope))
    this.batch = []
    this.transfers = []
  }

  private flush(): void {
    const batch = this.batch
    const transfers = this.transfers
    this.batch = []
    this.transfers = []
    if (batch.length === 0) return // Closed after it was scheduled.
    try {
      this.port.postMessage(batch, transfers)
    } catch {
      for (const envelope of batch) {
        try {
          this.port.postMessage([envelope], transferablesOf(envelopeContent(envelope)))
        } catch (error) {
          closeUndelivered(envelopeContent(envelope))
          this.onUnsent(envelope, error)
        }
      }
    }
  }
}

function envelopeContent(envelope: Envelope): unknown {
  return envelope.t === 'req' ? envelope.msg : envelope.result
}

interface Pending {
  resolve: (result: Result<unknown>) => void
  timer: NodeJS.Timeout
}

export class CallerLink {
  private readonly pending = new Map<number, Pending>()
  private readonly outbox: Outbox
  private nextId = 1
  private closed = false

  constructor(
    private readonly port: MessagePort,
    readonly peer: string,
  ) {
    this.outbox = new Outbox(port, (envelope, error) => {
      this.settle(envelope.id, fail('internal', `${peer}: cannot send: ${String(error)}`))
    })
    port.on('message', (batch: Batch) => {
      for (const envelope of batch) this.onReply(envelope)
    })
    port.on('close', () => this.close('peer closed the link'))
  }

  get outstanding(): number {
    return this.pending.size
  }

  call<T>(msg: { kind: string; deadlineMs: number }): Promise<Result<T>> {
    if (this.closed) return undelivered(msg, 'unavailable', `${this.peer} is restarting`)
    if (this.pending.size >= PENDING_CALLS_MAX) {
      return undelivered(msg, 'busy', `${this.peer}: too many outstanding requests`)
    }
    const waitMs = msg.deadlineMs - Date.now()
    if (waitMs <= 0) return undelivered(msg, 'timeout', `deadline passed before ${msg.kind}`)
    const id = this.nextId++
    return new Promise<Result<T>>((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(id)
        resolve(fail('timeout', `${this.peer} did not answer ${msg.kind} in time`))
      }, waitMs)
      this.pending.set(id, { resolve: resolve as (r: Result<unknown>) => void, timer })
      this.outbox.post({ t: 'req', id, msg }, transferablesOf(msg))
    })
  }

  private onReply(envelope: Envelope): void {
    assert(envelope.t === 'res')
    this.settle(envelope.id, envelope.result)
  }

  private settle(id: number, result: Result<unknown>): void {
    const entry = this.pending.get(id)
    if (entry === undefined) return // Answered after its deadline: already failed as a timeout.
    this.pending.delete(id)
    clearTimeout(entry.timer)
    entry.resolve(result)
  }

  /** Fails every pending call; later calls fail at once. */
  close(reason: string): void {
    if (this.closed) return
    this.closed = true
    for (const entry of this.pending.values()) {
      clearTimeout(entry.timer)
      entry.resolve(fail('unavailable', `${this.peer}: ${reason}`))
    }
    this.pending.clear()
    this.outbox.close()
    this.port.close()
  }
}

/** The answer to a request that is not sent: its streams close, the call fails with `code`. */
export function undelivered<T>(msg: unknown, code: ErrorCode, detail: string): Promise<Result<T>> {
  closeUndelivered(msg)
  return Promise.resolve(fail(code, detail))
}

export type Dispatch = (msg: { kind: string; deadlineMs: number }) => Promise<Result<unknown>>

/** The serving end: every request goes to `dispatch` (which applies the mailbox bound); the reply
 * goes back with its body transferred. */
export function serveLink(port: MessagePort, dispatch: Dispatch): void {
  const outbox = new Outbox(port, (envelope, error) => {
    const result = fail('internal', `reply could not be sent: ${String(error)}`)
    try {
      port.postMessage([{ t: 'res', id: envelope.id, result }] satisfies Batch)
    } catch {
      // The caller's end is gone (it restarted); its pending call already failed there.
    }
  })
  const reply = (id: number, result: Result<unknown>): void => {
    outbox.post({ t: 'res', id, result }, transferablesOf(result))
  }
  port.on('message', (batch: Batch) => {
    for (const envelope of batch) {
      assert(envelope.t === 'req')
      void dispatch(envelope.msg).then(
        (result) => reply(envelope.id, result),
        (error: unknown) => reply(envelope.id, fail('internal', String(error))),
      )
    }
  })
}
