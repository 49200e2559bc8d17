/** @module What a promise settles as, for tests of failures: `ok`, or the ServiceError code it
 * rejected with (any other error as text). */
import { ServiceError } from '../../protocol/errors.js'

export async function rejectionCode(promise: Promise<unknown>): Promise<string> {
  try {
    await promise
    return 'ok'
  } catch (error) {
    return error instanceof ServiceError ? error.code : String(error)
  }
}
