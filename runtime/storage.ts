/** @module Opens the data directory for replica-store, its sole owner: RocksDB metadata under
 * `meta/`, blob files beside it. */
import { join } from 'node:path'
import type { BlobFiles, KvStore } from '../protocol/actor.js'
import { openBlobFiles } from './blob-files.js'
import { openRocksKv } from './rocks-kv.js'

export interface Storage {
  kv: KvStore
  blobs: BlobFiles
  close(): Promise<void>
}

export async function openStorage(config: Readonly<Record<string, string>>): Promise<Storage> {
  const dataDir = config['SVC_DATA_DIR'] ?? './data'
  const kv = await openRocksKv(join(dataDir, 'meta'))
  const blobs = await openBlobFiles(dataDir)
  return {
    kv,
    blobs,
    async close() {
      await kv.close()
      await blobs.close()
    },
  }
}
