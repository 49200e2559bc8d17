/** @module What another thread of a single node reads of the store's metadata database itself:
 * an object's current version, for the ingress to answer GET and HEAD without a hop to the
 * store's thread, which every request of the node shares. It reads what is durable, and the store
 * answers a write once its batch is, so a read that follows a write's answer sees it, on any
 * thread. Anything past the common case is the store's to answer (null here): a missing bucket or
 * key, a delete marker, a GET of a multipart or file object, and an inline copy that fails its
 * CRC32, which the store then reads again and reports. */
import type { KvReader } from '../../protocol/actor.js'
import { crc32Update } from '../../protocol/checksums.js'
import type { GetResult } from '../../protocol/messages.js'
import { blobKey, bucketKey, inlineKey, objectKey } from './keys.js'
import { Mutation } from './mutation.js'
import { blobsOf, objectInfo } from './records.js'
import { versioningOf } from './engine/versions.js'

export function readCurrent(
  kv: KvReader,
  bucket: string,
  key: string,
  withBody: boolean,
): GetResult | null {
  const view = new Mutation(kv)
  view.prefetch([bucketKey(bucket), objectKey(bucket, key)])
  if (view.bucket(bucket) === undefined) return null
  const record = view.object(bucket, key)
  if (record === undefined || record.deleteMarker === true) return null
  const info = objectInfo(key, record, versioningOf(view, bucket) !== undefined)
  if (!withBody) return { info }
  const blobs = blobsOf(record)
  const sha256 = blobs.length === 1 ? blobs[0]?.sha256 : undefined
  if (sha256 === undefined) return null
  view.prefetch([blobKey(sha256), inlineKey(sha256)])
  const blob = view.blob(sha256)
  if (blob === undefined || blob.file !== undefined) return null
  const stored = view.get(inlineKey(sha256))
  if (stored === undefined || stored.byteLength !== blob.size) return null
  if (crc32Update(0, stored) !== blob.crc32) return null
  return { info, body: new Uint8Array(stored) }
}
