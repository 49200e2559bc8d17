/** @module How the node ends when it cannot run as configured: one line on stderr that names the
 * variable and the cause, and exit code 2 (EXIT_UNUSABLE), distinct from a crash loop's 1. It
 * covers a ConfigError (a value the node refuses) and an EnvironmentError (a port in use, a data
 * directory it cannot write, TLS files that are not a pair, a master key that does not open the
 * stored secrets), raised in main.ts or reported by an actor through the supervisor. No stack:
 * the operator has nothing to debug, only a setting to change. */
import { EnvironmentError } from '../protocol/environment-error.js'
import { ConfigError } from './config.js'
import type { EnvironmentFailure } from './supervisor.js'

export const EXIT_UNUSABLE = 2

/** The line for a failure the operator must fix, or null for any other error (a fault of ours). */
export function fatalLine(failure: EnvironmentFailure | unknown): string | null {
  if (failure instanceof ConfigError) return `configuration error: ${failure.message}`
  if (failure instanceof EnvironmentError) return environmentLine(failure)
  if (isEnvironmentFailure(failure)) return environmentLine(failure)
  return null
}

function environmentLine(failure: { variable: string; reason: string }): string {
  return `environment error: ${failure.variable}: ${failure.reason}`
}

function isEnvironmentFailure(value: unknown): value is EnvironmentFailure {
  const failure = value as Partial<EnvironmentFailure> | null
  return typeof failure?.variable === 'string' && typeof failure.reason === 'string'
}
