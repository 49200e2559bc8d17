/** @module The data directory as the operator gave it (SVC_DATA_DIR), checked once before any actor
 * starts: it exists or its parent does (the node creates the last level only, so a volume that is
 * not mounted is not silently replaced by a directory on the root file system), it is a directory,
 * this user can write it, and its file system is not read-only (a probe file is created and
 * removed). It is made owner-only (0700): it holds password hashes, sealed secrets and every
 * object, and the files the node creates in it are owner-only through main.ts's umask. A failure is
 * an EnvironmentError naming SVC_DATA_DIR; `dataDirFailure` words the same causes for the store's
 * own opening (a restart that meets a directory made unwritable meanwhile). */
import { chmodSync, closeSync, mkdirSync, openSync, statSync, unlinkSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { EnvironmentError } from '../protocol/environment-error.js'

const VARIABLE = 'SVC_DATA_DIR'
/** Owner-only: read, write and traverse for the node's user, nothing for anyone else. */
export const DATA_DIR_MODE = 0o700
/** The umask main.ts sets first: files come out 0600 and directories 0700 whatever the shell's. */
export const NODE_UMASK = 0o077

export function prepareDataDir(dir: string): void {
  ensureDirectory(dir)
  try {
    chmodSync(dir, DATA_DIR_MODE)
  } catch (error) {
    throw dataDirFailure(error, dir, 'cannot be made owner-only (0700)')
  }
  probeWrite(dir)
}

function ensureDirectory(dir: string): void {
  try {
    if (!statSync(dir).isDirectory()) {
      throw new EnvironmentError(VARIABLE, `${dir} is not a directory`)
    }
    return
  } catch (error) {
    if (errorCode(error) !== 'ENOENT') throw dataDirFailure(error, dir, 'cannot be read')
  }
  try {
    mkdirSync(dir, { mode: DATA_DIR_MODE })
  } catch (error) {
    if (errorCode(error) !== 'ENOENT') throw dataDirFailure(error, dir, 'cannot be created')
    const parent = dirname(dir)
    throw new EnvironmentError(
      VARIABLE,
      `${dir} does not exist, nor does its parent ${parent} (is the volume mounted?)`,
    )
  }
}

/** Creating and removing a file is what the store does first; this says why it would fail. A full
 * disk is not refused here: the store starts on it and answers writes 507. */
function probeWrite(dir: string): void {
  const probe = join(dir, `.write-probe-${process.pid}`)
  try {
    closeSync(openSync(probe, 'wx'))
    unlinkSync(probe)
  } catch (error) {
    const code = errorCode(error)
    if (code === 'ENOSPC' || code === 'EDQUOT') return
    throw dataDirFailure(error, dir, 'is not writable')
  }
}

const CAUSES: Readonly<Record<string, string>> = {
  EROFS: 'it is on a read-only file system',
  EACCES: 'permission denied to this user',
  EPERM: 'permission denied to this user (not its owner)',
  ENOTDIR: 'a part of the path is not a directory',
  ENOENT: 'a part of the path does not exist',
}

/** The operator's words for a file-system error met in the data directory. */
export function dataDirFailure(error: unknown, dir: string, what: string): EnvironmentError {
  if (error instanceof EnvironmentError) return error
  const code = errorCode(error)
  const cause = (code === undefined ? undefined : CAUSES[code]) ?? code ?? String(error)
  return new EnvironmentError(VARIABLE, `${dir} ${what}: ${cause}`)
}

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code
}
