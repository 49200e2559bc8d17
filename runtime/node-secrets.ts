/** @module The node's secrets, each from the environment or from a file in the data directory
 * created with mode 0600 on first start: the master key that seals secrets at rest (AES-256-GCM;
 * SVC_MASTER_KEY or master.key, 64 hex characters) and the HMAC secret of admin JWTs
 * (SVC_JWT_SECRET or jwt.secret). Never a default string: a missing file gets random bytes. On a
 * cluster node both are derived from the cluster key unless set, so that every node opens the
 * secrets another sealed and verifies the tokens another issued. */
import { hkdfSync, randomBytes } from 'node:crypto'
import { mkdir, open, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { ConfigError } from './config.js'

const HEX_64 = /^[0-9a-fA-F]{64}$/
/** HS256 keys shorter than the hash output weaken it (RFC 7518 section 3.2). */
const JWT_SECRET_CHARS_MIN = 32

export interface NodeSecrets {
  SVC_MASTER_KEY: string
  SVC_JWT_SECRET: string
}

export async function loadNodeSecrets(
  dataDir: string,
  env: NodeJS.ProcessEnv,
  clusterKey: Buffer | null = null,
): Promise<NodeSecrets> {
  const masterKey = env['SVC_MASTER_KEY']
  if (masterKey !== undefined && masterKey !== '' && !HEX_64.test(masterKey)) {
    throw new ConfigError('SVC_MASTER_KEY must be 64 hexadecimal characters (32 bytes)')
  }
  const jwtSecret = env['SVC_JWT_SECRET']
  if (jwtSecret !== undefined && jwtSecret !== '' && jwtSecret.length < JWT_SECRET_CHARS_MIN) {
    throw new ConfigError(`SVC_JWT_SECRET must be at least ${JWT_SECRET_CHARS_MIN} characters`)
  }
  if (clusterKey !== null) {
    // Every node of a cluster opens the same sealed secrets and checks the same tokens.
    return {
      SVC_MASTER_KEY: (masterKey || derivedSecret(clusterKey, 'master key')).toLowerCase(),
      SVC_JWT_SECRET: jwtSecret || derivedSecret(clusterKey, 'admin token key'),
    }
  }
  return {
    SVC_MASTER_KEY: (masterKey || (await keyFile(dataDir, 'master.key'))).toLowerCase(),
    SVC_JWT_SECRET: jwtSecret || (await keyFile(dataDir, 'jwt.secret')),
  }
}

/** 32 bytes as hex, derived from the cluster key for one purpose (HKDF's info). */
function derivedSecret(clusterKey: Buffer, purpose: string): string {
  const info = `svc-object-store ${purpose} v1`
  return Buffer.from(hkdfSync('sha256', clusterKey, '', info, 32)).toString('hex')
}

/** 32 random bytes as hex, kept in `name` under the data directory. */
async function keyFile(dataDir: string, name: string): Promise<string> {
  await mkdir(dataDir, { recursive: true })
  const path = join(dataDir, name)
  try {
    const existing = (await readFile(path, 'utf8')).trim()
    if (!HEX_64.test(existing)) throw new ConfigError(`${path} is not a valid key file`)
    return existing
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
  }
  const key = randomBytes(32).toString('hex')
  // 'wx' fails if another process created it in between; mode 0600 keeps it from other users.
  const file = await open(path, 'wx', 0o600)
  try {
    await file.writeFile(key + '\n')
    await file.sync()
  } finally {
    await file.close()
  }
  return key
}
