/** @module Which of a node's threads bound its rate when ingress threads are added on more cores,
 * by thread name (the `comm` of /proc, at most 15 characters): the ingress threads (http-ingress
 * alone, http-ingress-1..N when several) are what is added; the pools that already grow with the
 * cores are V8's workers (V8Worker: GC and compilation), libuv's pool (libuv-worker) and RocksDB's
 * background threads (rocksdb:low, rocksdb:high, rocksdb:bottom), and a store of several shards
 * (SVC_STORE_SHARDS, one per core by default: replica-store-1..N and kv-writer-1..N), each shard
 * taking its keys' part of the requests; every other thread is one per node whatever its cores
 * (MainThread, iam, scrubber, coordinator, a store of one shard: replica-store, kv-writer, ...),
 * so the busiest of those sets the node's ceiling. */

export type ThreadKind = 'ingress' | 'pool' | 'shard' | 'shared'

/** A single ingress thread is http-ingress, several are numbered. */
const INGRESS = /^http-ingress(-\d+)?$/
const POOLS: readonly RegExp[] = [/^V8Worker$/, /^libuv-worker$/, /^rocksdb:/]
/** A store of several shards: each shard's thread and its writer, numbered (one store alone is
 * replica-store and kv-writer, shared). */
const SHARD = /^(replica-store|kv-writer)-\d+$/

export function threadKind(name: string): ThreadKind {
  if (INGRESS.test(name)) return 'ingress'
  if (SHARD.test(name)) return 'shard'
  return POOLS.some((pool) => pool.test(name)) ? 'pool' : 'shared'
}
