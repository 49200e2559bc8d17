/** @module Opens the data directory for replica-store, its sole owner: the data volume's watch
 * first (on a full volume it deletes the reserve, so that the metadata database finds room to
 * open), then RocksDB metadata under `meta/` and blob files beside it. */
import { join } from 'node:path'
import type { BlobFiles, Logger, KvStore } from '../protocol/actor.js'
import { openBlobFiles } from './blob-files.js'
import { DataVolume } from './data-volume.js'
import { openRocksKv } from './rocks-kv.js'

export interface Storage {
  kv: KvStore
  blobs: BlobFiles
  close(): Promise<void>
}

export async function openStorage(
  config: Readonly<Record<string, string>>,
  log: Logger,
): Promise<Storage> {
  const dataDir = config['SVC_DATA_DIR'] ?? './data'
  const volume = await DataVolume.open(dataDir, log)
  const kv = await openRocksKv(join(dataDir, 'meta'), { onNoSpace: () => volume.exhausted() })
  const blobs = await openBlobFiles(dataDir, volume)
  return {
    kv,
    blobs,
    async close() {
      await kv.close()
      await blobs.close()
      await volume.close()
    },
  }
}
