/** @module EnvironmentError: the node cannot run because of something the operator controls (a port
 * in use, a data directory it cannot write, TLS files that are not a pair, a master key that does
 * not open the stored secrets). Restarting cannot fix it, so the runtime does not: the node stops
 * and prints one line naming the variable to change and why (runtime/fatal.ts). An actor throws it
 * from `init`; it must name a setting the operator can act on, never wrap a programmer error. */

export class EnvironmentError extends Error {
  constructor(
    /** The setting to look at, e.g. `SVC_DATA_DIR`. */
    readonly variable: string,
    /** What is wrong with it, in words for an operator (no stack, no errno alone). */
    readonly reason: string,
  ) {
    super(`${variable}: ${reason}`)
    this.name = 'EnvironmentError'
  }
}
