/** @module The HTTPS certificate and key (SVC_TLS_CERT, SVC_TLS_KEY): read and checked as a pair,
 * by main.ts before any actor starts and by each ingress thread when it opens its port, so that a
 * file missing, unreadable, not PEM, or a key that does not belong to the certificate is an
 * EnvironmentError naming the variable, not a thread that crashes and restarts. The gRPC
 * transport reads its own pair and CA the same way (cluster/grpc-tls.ts). */
import { X509Certificate, createPrivateKey } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { EnvironmentError } from '../protocol/environment-error.js'

export interface TlsPair {
  cert: Buffer
  key: Buffer
}

/** Reads and checks the pair; `variables` name the settings in errors (the gRPC transport has its
 * own). */
export function readTlsPair(
  certPath: string,
  keyPath: string,
  variables = { cert: 'SVC_TLS_CERT', key: 'SVC_TLS_KEY' },
): TlsPair {
  const cert = readPem(variables.cert, certPath)
  const key = readPem(variables.key, keyPath)
  const certificate = parse(
    variables.cert,
    certPath,
    'a PEM certificate',
    () => new X509Certificate(cert),
  )
  const privateKey = parse(variables.key, keyPath, 'a PEM private key', () => createPrivateKey(key))
  if (!certificate.checkPrivateKey(privateKey)) {
    throw new EnvironmentError(
      variables.key,
      `${keyPath} is not the private key of the certificate in ${certPath}`,
    )
  }
  return { cert, key }
}

/** A PEM CA certificate (bundle), read and parsed. */
export function readCaFile(variable: string, path: string): Buffer {
  const ca = readPem(variable, path)
  parse(variable, path, 'a PEM certificate', () => new X509Certificate(ca))
  return ca
}

function readPem(variable: string, path: string): Buffer {
  try {
    return readFileSync(path)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    const cause =
      code === 'ENOENT'
        ? 'does not exist'
        : code === 'EACCES'
          ? 'is not readable by this user'
          : code === 'EISDIR'
            ? 'is a directory'
            : `cannot be read (${code ?? String(error)})`
    throw new EnvironmentError(variable, `${path} ${cause}`)
  }
}

function parse<T>(variable: string, path: string, what: string, read: () => T): T {
  try {
    return read()
  } catch {
    throw new EnvironmentError(variable, `${path} is not ${what}`)
  }
}
