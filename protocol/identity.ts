/** @module Identity rules shared by the admin API (which validates what clients send) and iam
 * (which asserts them): roles, username format, password bounds. */
import type { z } from 'zod'
import type { loginOutcome } from './wire/iam.js'

export const ROLES = ['Reader', 'Writer', 'SuperUser'] as const
export type Role = (typeof ROLES)[number]

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value)
}

/** SPEC.md: 3 to 32 characters, ASCII letters, digits and underscore. */
const USERNAME_PATTERN = /^[A-Za-z0-9_]{3,32}$/

export function isValidUsername(value: string): boolean {
  return USERNAME_PATTERN.test(value)
}

/** Iam.LoginOutcome, from the storage node that checked a password to the others (its schema is
 * wire/iam.ts's). */
export type LoginOutcome = z.infer<typeof loginOutcome>

/** argon2 takes any length, but hashing a huge password is a cheap way to burn a server's CPU. */
export const PASSWORD_BYTES_MAX = 1024
/** An empty password is never a credential. */
export const PASSWORD_CHARS_MIN = 1

export function isAcceptablePassword(value: string): boolean {
  return value.length >= PASSWORD_CHARS_MIN && Buffer.byteLength(value) <= PASSWORD_BYTES_MAX
}
