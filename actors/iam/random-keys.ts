/** @module Credential generation from the actor's CSPRNG bytes: access key `SVCAK` + 20 characters,
 * secret key 40 characters (SPEC.md section 2). Rejection sampling keeps the alphabet uniform. */
const ACCESS_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'
const SECRET_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'

function randomString(length: number, alphabet: string, bytes: (n: number) => Uint8Array): string {
  // Accept only bytes below the largest multiple of the alphabet size: no modulo bias.
  const limit = 256 - (256 % alphabet.length)
  let out = ''
  while (out.length < length) {
    for (const byte of bytes(length * 2)) {
      if (byte < limit && out.length < length) out += alphabet[byte % alphabet.length]
    }
  }
  return out
}

export function newAccessKey(bytes: (n: number) => Uint8Array): string {
  return 'SVCAK' + randomString(20, ACCESS_ALPHABET, bytes)
}

export function newSecretKey(bytes: (n: number) => Uint8Array): string {
  return randomString(40, SECRET_ALPHABET, bytes)
}
