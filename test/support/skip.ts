/** @module A case that cannot run on this machine (a tool or a privilege missing outside CI) says
 * so with `skipCase` and returns. uvu would count it passed; the line it prints is what the test
 * runner (test/run.ts) counts and names as skipped instead. */

/** The mark at the start of the line the runner looks for. */
export const SKIP_MARK = 'case skipped:'

/** Prints why the running case does not run; the case returns right after. */
export function skipCase(reason: string): void {
  console.log(`  ${SKIP_MARK} ${reason}`)
}
