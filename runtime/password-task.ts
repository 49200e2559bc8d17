/** @module The task file of the password pool (runtime/password-pool.ts): argon2id hashing and
 * verification on a piscina thread. The cost follows OWASP's recommendation for argon2id (19 MiB
 * of memory, 2 passes, 1 lane): tens of milliseconds a task. These threads are never terminated
 * while a task runs, which is why argon2 lives here and not in iam: a native argon2 call in flight
 * on a thread that is terminated (a chaos kill of iam) aborts the whole process. */
import { argon2id, hash, verify } from 'argon2'

const HASH_OPTIONS = { type: argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const

export type PasswordTask =
  | { kind: 'hash'; password: string; salt: Uint8Array }
  | { kind: 'verify'; storedHash: string; password: string }

export default async function run(task: PasswordTask): Promise<string | boolean> {
  if (task.kind === 'hash')
    return hash(task.password, { ...HASH_OPTIONS, salt: Buffer.from(task.salt) })
  try {
    return await verify(task.storedHash, task.password)
  } catch {
    return false // A malformed stored hash matches no password.
  }
}
