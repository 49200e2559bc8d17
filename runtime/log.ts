/** @module Structured logging: one JSON line per event (pino), tagged with the actor's name. */
import { pino, type Logger as PinoLogger } from 'pino'
import type { Logger } from '../protocol/actor.js'

export function createLogger(actor: string): Logger & { raw: PinoLogger } {
  const raw = pino({ base: { actor }, level: process.env['SVC_LOG_LEVEL'] ?? 'info' })
  return {
    raw,
    info: (fields, message) => raw.info(fields, message),
    warn: (fields, message) => raw.warn(fields, message),
    error: (fields, message) => raw.error(fields, message),
  }
}
