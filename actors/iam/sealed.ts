/** @module Secrets at rest: AES-256-GCM with the node's master key. A sealed value is
 * `v1.<iv>.<tag>.<ciphertext>` in base64url; the version prefix allows key rotation later. */
import assert from 'node:assert/strict'
import { createCipheriv, createDecipheriv } from 'node:crypto'

const IV_BYTES = 12

export function seal(plain: string, masterKeyHex: string, iv: Uint8Array): string {
  assert(iv.length === IV_BYTES)
  const cipher = createCipheriv('aes-256-gcm', Buffer.from(masterKeyHex, 'hex'), iv)
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()])
  const parts = [Buffer.from(iv), cipher.getAuthTag(), body].map((b) => b.toString('base64url'))
  return `v1.${parts.join('.')}`
}

/** The plain text, or undefined if the value is not ours or was tampered with. */
export function unseal(sealed: string, masterKeyHex: string): string | undefined {
  const [version, iv, tag, body] = sealed.split('.')
  if (version !== 'v1' || iv === undefined || tag === undefined || body === undefined) return
  try {
    const key = Buffer.from(masterKeyHex, 'hex')
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'))
    decipher.setAuthTag(Buffer.from(tag, 'base64url'))
    const plain = Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()])
    return plain.toString('utf8')
  } catch {
    return undefined
  }
}

export const SEAL_IV_BYTES = IV_BYTES
