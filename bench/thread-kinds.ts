/** @module Which of a node's threads bound its rate when ingress threads are added on more cores,
 * by thread name (the `comm` of /proc, at most 15 characters): the ingress threads (http-ingress
 * alone, http-ingress-1..N when several) are what is added; the pools that already grow with the
 * cores are V8's workers (V8Worker: GC and compilation), libuv's pool (libuv-worker) and RocksDB's
 * background threads (rocksdb:low, rocksdb:high, rocksdb:bottom); every other thread is one per
 * node whatever its cores (MainThread, replica-store, kv-writer, iam, scrubber, coordinator, ...),
 * so the busiest of those sets the node's ceiling. */

export type ThreadKind = 'ingress' | 'pool' | 'shared'

/** A single ingress thread is http-ingress, several are numbered. */
const INGRESS = /^http-ingress(-\d+)?$/
const POOLS: readonly RegExp[] = [/^V8Worker$/, /^libuv-worker$/, /^rocksdb:/]

export function threadKind(name: string): ThreadKind {
  if (INGRESS.test(name)) return 'ingress'
  return POOLS.some((pool) => pool.test(name)) ? 'pool' : 'shared'
}
