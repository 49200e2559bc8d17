/** @module Structured logging: one JSON line per event on stdout (pino), tagged with the actor's
 * name, with an ISO-8601 UTC time and the level's name (`"level":"warn"`), which people and log
 * shippers read without pino's numeric table. `notice` is the one thing that does not go there: a
 * plain block for the operator on stderr (generated credentials, shown once), kept out of the log
 * stream that is collected and kept. */
import { pino, type Logger as PinoLogger } from 'pino'
import type { Logger } from '../protocol/actor.js'

/** SVC_LOG_LEVEL's values: pino's levels, and `silent`. */
export const LOG_LEVELS: readonly string[] = [...Object.keys(pino.levels.values), 'silent']
export const LOG_LEVEL_DEFAULT = 'info'

export function createLogger(actor: string): Logger & { raw: PinoLogger } {
  const raw = pino({
    base: { actor },
    level: process.env['SVC_LOG_LEVEL'] || LOG_LEVEL_DEFAULT,
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  })
  return {
    raw,
    info: (fields, message) => raw.info(fields, message),
    warn: (fields, message) => raw.warn(fields, message),
    error: (fields, message) => raw.error(fields, message),
    notice: (text) => process.stderr.write(text),
  }
}
