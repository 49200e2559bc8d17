/** @module Which store shard owns a key (runtime/store-shards.ts): the runtime sends a key's
 * requests there, and a shard's background work (the expiry of uploads) takes only its keys. */

/** The shard that owns `bucket/key`: FNV-1a over the bucket, a separator and the key. */
export function keyShard(bucket: string, key: string, shards: number): number {
  return shards === 1 ? 0 : fnv1a(`${bucket}\0${key}`) % shards
}

/** FNV-1a of a string's UTF-16 code units, unsigned: fast and well spread, for what only needs
 * the same answer on every thread of a node (shards, lock stripes). */
export function fnv1a(text: string): number {
  let hash = 0x811c9dc5
  for (let index = 0; index < text.length; index++) {
    hash ^= text.charCodeAt(index)
    hash = Math.imul(hash, 0x01000193)
  }
  return hash >>> 0
}
