/** @module The Iam.* calls: a login's outcome, from the storage node that checked a password to
 * the others, so that failed logins are counted cluster-wide (actors/iam/shared-throttle.ts). */
import { z } from 'zod'
import { isValidUsername } from '../identity.js'

/** An IPv6 address with a zone is at most a few dozen characters. */
const ADDRESS_CHARS_MAX = 64

/** Iam.LoginOutcome: a failed login (counted as if it had failed there), or a success that clears
 * the username's failures. Answered with null. */
export const loginOutcome = z.strictObject({
  username: z.string().refine(isValidUsername, 'an invalid username'),
  /** The client's address as the node that checked it saw it (http/client-address.ts). */
  address: z.string().max(ADDRESS_CHARS_MAX),
  failed: z.boolean(),
})
