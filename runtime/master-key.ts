/** @module The master key that encrypts secrets at rest (AES-256-GCM): from SVC_MASTER_KEY (64 hex
 * characters), or a key file in the data directory created with mode 0600 on first start. */
import { randomBytes } from 'node:crypto'
import { mkdir, open, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { ConfigError } from './config.js'

const KEY_FILE = 'master.key'

export async function loadMasterKey(dataDir: string, fromEnv: string | undefined): Promise<string> {
  if (fromEnv !== undefined && fromEnv !== '') {
    if (!/^[0-9a-fA-F]{64}$/.test(fromEnv)) {
      throw new ConfigError('SVC_MASTER_KEY must be 64 hexadecimal characters (32 bytes)')
    }
    return fromEnv.toLowerCase()
  }
  await mkdir(dataDir, { recursive: true })
  const path = join(dataDir, KEY_FILE)
  try {
    const existing = (await readFile(path, 'utf8')).trim()
    if (!/^[0-9a-f]{64}$/.test(existing)) throw new ConfigError(`${path} is not a valid key file`)
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
