/** @module A self-signed certificate for 127.0.0.1 and its key, made with openssl in `dir`, for
 * tests of HTTPS and of TLS files the node must refuse. */
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'

export function selfSignedCertificate(dir: string): { cert: string; key: string } {
  const cert = join(dir, 'cert.pem')
  const key = join(dir, 'key.pem')
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  )
  return { cert, key }
}
