/** @module A self-signed certificate for 127.0.0.1 and its key, made with openssl in a temp
 * directory (or in `dir`), for tests of a node serving HTTPS and of TLS files it must refuse. */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface TestCertificate {
  cert: string
  key: string
  /** Removes the directory of both files. */
  cleanup(): void
}

export function selfSignedCertificate(
  dir = mkdtempSync(join(tmpdir(), 'svc-tls-')),
): TestCertificate {
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
    { stdio: 'ignore', timeout: 30_000 },
  )
  return { cert, key, cleanup: () => rmSync(dir, { recursive: true, force: true }) }
}
