/** @module Password hashing with argon2id. The cost follows OWASP's recommendation for argon2id
 * (19 MiB of memory, 2 passes, 1 lane): about 50 ms here, run on libuv's thread pool so iam's event
 * loop stays free. Salts come from ctx.randomBytes so a simulation can replay a run. A dummy hash of
 * a random password, made at start with the same parameters, lets a login for an unknown user cost
 * exactly what a wrong password costs. */
import { argon2id, hash, verify } from 'argon2'

const HASH_OPTIONS = { type: argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const
const SALT_BYTES = 16

export function hashPassword(password: string, salt: Uint8Array): Promise<string> {
  if (salt.byteLength !== SALT_BYTES) throw new RangeError(`salt must be ${SALT_BYTES} bytes`)
  return hash(password, { ...HASH_OPTIONS, salt: Buffer.from(salt) })
}

export function newSalt(randomBytes: (length: number) => Uint8Array): Uint8Array {
  return randomBytes(SALT_BYTES)
}

/** False for a wrong password and for a malformed stored hash alike. */
export async function passwordMatches(storedHash: string, password: string): Promise<boolean> {
  try {
    return await verify(storedHash, password)
  } catch {
    return false
  }
}
