/** @module Identity rules shared by the admin API (which validates what clients send) and iam
 * (which asserts them): roles, username format, password bounds. */

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

/** Iam.LoginOutcome, from the storage node that checked a password to the others: a failed login
 * (counted as if it had failed there), or a success that clears the username's failures. */
export interface LoginOutcome {
  username: string
  /** The client's address as the node that checked it saw it (http/client-address.ts). */
  address: string
  failed: boolean
}

/** An IPv6 address with a zone is at most a few dozen characters. */
const ADDRESS_CHARS_MAX = 64

/** A LoginOutcome from a peer's bytes, or null when malformed. */
export function parseLoginOutcome(body: unknown): LoginOutcome | null {
  const outcome = body as Partial<LoginOutcome> | null
  if (typeof outcome !== 'object' || outcome === null) return null
  const { username, address, failed } = outcome
  if (typeof username !== 'string' || !isValidUsername(username)) return null
  if (typeof address !== 'string' || address.length > ADDRESS_CHARS_MAX) return null
  if (typeof failed !== 'boolean') return null
  return { username, address, failed }
}

/** argon2 takes any length, but hashing a huge password is a cheap way to burn a server's CPU. */
export const PASSWORD_BYTES_MAX = 1024
/** An empty password is never a credential. */
export const PASSWORD_CHARS_MIN = 1

export function isAcceptablePassword(value: string): boolean {
  return value.length >= PASSWORD_CHARS_MIN && Buffer.byteLength(value) <= PASSWORD_BYTES_MAX
}
