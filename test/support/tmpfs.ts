/** @module A small tmpfs for tests of a full disk: mounted on a fresh temp directory, unmounted and
 * removed by `unmount`. Mounting needs root (or CAP_SYS_ADMIN); where it fails, `mountTmpfs`
 * answers why, and the test says so and does not run. */
import { execFile } from 'node:child_process'
import { mkdtemp, rmdir } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)
/** mount and umount are quick; this bounds a hung one. */
const MOUNT_TIMEOUT_MS = 10_000

export interface Tmpfs {
  dir: string
  unmount(): Promise<void>
}

export async function mountTmpfs(sizeMiB: number): Promise<Tmpfs | { refused: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-tmpfs-'))
  try {
    await run('mount', ['-t', 'tmpfs', '-o', `size=${sizeMiB}m`, 'tmpfs', dir], {
      timeout: MOUNT_TIMEOUT_MS,
    })
  } catch (error) {
    await rmdir(dir)
    const reason = (error as { stderr?: string }).stderr?.trim() ?? String(error)
    return { refused: reason === '' ? String(error) : reason }
  }
  return {
    dir,
    async unmount() {
      await run('umount', [dir], { timeout: MOUNT_TIMEOUT_MS })
      await rmdir(dir)
    },
  }
}
