/** @module Password hashing for iam: argon2id through ctx.passwords, which runs it on the node's
 * CPU pool (the cost parameters live with the pool's task, runtime/password-task.ts). Salts come
 * from ctx.randomBytes so a simulation can replay a run. A dummy hash of a random password, made
 * at start, lets a login for an unknown user cost exactly what a wrong password costs. */
import type { Context } from '../../protocol/actor.js'

const SALT_BYTES = 16

export function hashPassword(ctx: Context, password: string): Promise<string> {
  return ctx.passwords.hash(password, ctx.randomBytes(SALT_BYTES))
}
