/** @module Mailbox: the bounded front door of an actor. At most `depthMax` requests are in progress
 * at once; one more is answered `busy` at once (the client sees 503 SlowDown), never queued. A
 * request already past its deadline is dropped as `timeout` without running; either way the stream
 * ports a refused request carries are closed, so their other ends fail at once. A handler's thrown
 * ServiceError becomes its Result; an assertion failure is a programmer error and goes to `crash`
 * (the thread dies and the supervisor restarts it); anything else is an `internal` failure. */
import { AssertionError } from 'node:assert'
import { fail, ServiceError, type Result } from '../protocol/errors.js'
import type { ActorMetrics } from './actor-metrics.js'
import { closeUndelivered } from './transfer.js'

export type Handler = (msg: {
  kind: string
  deadlineMs: number
}) => Promise<Result<unknown>> | Result<unknown>

export interface MailboxOptions {
  actor: string
  depthMax: number
  now: () => number
  metrics: ActorMetrics
  onCrash: (error: AssertionError) => void
  onFailure: (error: unknown, kind: string) => void
}

export class Mailbox {
  private inFlight = 0

  constructor(
    private readonly options: MailboxOptions,
    private readonly handler: Handler,
  ) {}

  get depth(): number {
    return this.inFlight
  }

  async deliver(msg: { kind: string; deadlineMs: number }): Promise<Result<unknown>> {
    const { metrics } = this.options
    if (this.inFlight >= this.options.depthMax) {
      metrics.rejected.inc()
      closeUndelivered(msg)
      return fail('busy', `${this.options.actor} mailbox full`)
    }
    if (msg.deadlineMs <= this.options.now()) {
      metrics.expired.inc()
      closeUndelivered(msg)
      return fail('timeout', `${msg.kind} arrived after its deadline`)
    }
    this.inFlight++
    metrics.depth.set(this.inFlight)
    const end = metrics.duration.startTimer({ kind: msg.kind })
    try {
      return await this.handler(msg)
    } catch (error) {
      if (error instanceof ServiceError) return fail(error.code, error.message)
      if (error instanceof AssertionError) this.options.onCrash(error)
      else this.options.onFailure(error, msg.kind)
      return fail('internal', `${this.options.actor} failed on ${msg.kind}`)
    } finally {
      this.inFlight--
      metrics.depth.set(this.inFlight)
      metrics.handled.inc({ kind: msg.kind })
      end()
    }
  }
}
