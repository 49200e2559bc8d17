/** @module The real blob files in a fresh temp directory, removed after the test. */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openBlobFiles, type BlobSpace, type LocalBlobFiles } from '../../runtime/blob-files.js'
import { ROOMY_VOLUME } from './fake-context.js'

export async function withBlobFiles(
  run: (files: LocalBlobFiles, dir: string) => Promise<void>,
  space: BlobSpace = ROOMY_VOLUME,
): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'blob-files-test-'))
  const files = await openBlobFiles(dir, space)
  try {
    await run(files, dir)
  } finally {
    await files.close()
    await rm(dir, { recursive: true, force: true })
  }
}
