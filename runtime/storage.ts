/** @module The data directory. The runtime opens the metadata database (RocksDB under `meta/`)
 * before any actor starts and closes it after they all stopped (openMetadata): it deletes the
 * reserve first, so that the database finds room to open on a full volume, and sizes the
 * database's memtables to the volume. replica-store, the directory's sole writer, then opens its
 * storage on it (openStorage): the data volume's watch (which writes the reserve back), the
 * database by the runtime's handle, and blob files beside it. A directory that cannot be opened
 * because of its permissions or its file system (main.ts checked it at start, but a restart may
 * meet it changed) is an EnvironmentError naming SVC_DATA_DIR: the node stops rather than restart
 * the store in a loop. */
import { join } from 'node:path'
import type { BlobFiles, Logger, KvStore } from '../protocol/actor.js'
import { openBlobFiles } from './blob-files.js'
import { DataVolume, releaseReserveToOpen } from './data-volume.js'
import { dataDirFailure } from './data-dir.js'
import { attachRocksKv, openMetadataDb, type MetadataDb } from './rocks-kv.js'

export interface Storage {
  kv: KvStore
  blobs: BlobFiles
  close(): Promise<void>
}

export async function openMetadata(dataDir: string): Promise<MetadataDb> {
  try {
    const memtableBytes = await releaseReserveToOpen(dataDir)
    return await openMetadataDb(join(dataDir, 'meta'), memtableBytes)
  } catch (error) {
    throw environmentCause(error, dataDir)
  }
}

/** `shards`: whether this store shard keeps the volume's reserve (shard 0), the count of bytes
 * written that all shards share (data-volume.ts), and its kv writer thread's name. */
export async function openStorage(
  config: Readonly<Record<string, string>>,
  log: Logger,
  metadata: bigint,
  shards: { keepsReserve: boolean; written: SharedArrayBuffer; writerName: string },
): Promise<Storage> {
  const dataDir = config['SVC_DATA_DIR'] ?? './data'
  const volume = await DataVolume.open(dataDir, log, shards).catch((error: unknown) => {
    throw environmentCause(error, dataDir)
  })
  const onNoSpace = (): void => volume.databaseExhausted()
  const kv = await attachRocksKv(metadata, { onNoSpace, writerName: shards.writerName }).catch(
    async (error: unknown) => {
      await volume.close()
      throw environmentCause(error, dataDir)
    },
  )
  volume.databaseOpened()
  const blobs = await openBlobFiles(dataDir, volume).catch(async (error: unknown) => {
    await kv.close()
    await volume.close()
    throw environmentCause(error, dataDir)
  })
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

/** RocksDB reports an I/O error as text in the open error's cause; node:fs as an errno code. */
const ENVIRONMENT_CODES = new Set(['EACCES', 'EPERM', 'EROFS', 'ENOTDIR', 'ENOENT'])
const ENVIRONMENT_TEXT: readonly [RegExp, string][] = [
  [/Permission denied/, 'EACCES'],
  [/Read-only file system/, 'EROFS'],
]

function environmentCause(error: unknown, dataDir: string): unknown {
  const cause = (error as { cause?: unknown } | undefined)?.cause ?? error
  const found = cause as { code?: string; message?: string } | undefined
  const text = String(found?.message ?? '')
  const code = ENVIRONMENT_CODES.has(found?.code ?? '')
    ? found?.code
    : ENVIRONMENT_TEXT.find(([pattern]) => pattern.test(text))?.[1]
  if (code === undefined) return error
  return dataDirFailure({ code }, dataDir, 'cannot be opened by the store')
}
