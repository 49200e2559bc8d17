/** @module Hints (cluster mode): a change a replica missed (it was down, cut off or failed) is
 * recorded by the node that coordinated it, durably before the client's answer when the miss was
 * known then, so nothing acknowledged rests on the other replicas alone without a record of what
 * the missing one lacks. One record per replica and key (`J\0`), the newest stamp kept: the
 * replica will need the key's newest state, not every change. The hint queue (actors/hint-queue)
 * pages through them and removes each once delivered or expired; here they are kept and counted,
 * in all and per replica. The counts are the records' by construction: read from them at start,
 * then moved by each batch once it is durable, by what it changed in the records as the batch's
 * reads saw them (which show every batch handed to commit before it). A batch that fails moves
 * nothing, and the batches queued behind it fail with it (runtime/rocks-kv.ts); a store that cannot
 * go on restarts and counts again. */
import type { Context, KvOp } from '../../../protocol/actor.js'
import { fail, ok, ServiceError, type Result } from '../../../protocol/errors.js'
import { MEMBERS_MAX } from '../../../protocol/membership.js'
import type { Hint } from '../../../protocol/messages.js'
import { HINT_END, HINT_PREFIX, hintKey } from '../keys.js'
import { decodeText } from '../records.js'
import { durably, type StoreState } from '../store-state.js'

/** Hints one request records at most (a DeleteObjects batch of 1000 keys for two replicas). */
export const HINTS_PER_REQUEST_MAX = 2_000
/** Hints kept at most (CLUSTER.md section 6), in all and for one replica: past either, new ones
 * are refused and logged, and the replicas they name wait for anti-entropy, which finds every
 * difference without them. */
export const HINTS_MAX = 4_000_000
export const HINTS_PER_NODE_MAX = 1_000_000
/** Hints one page or one `hint.done` names at most. */
export const HINT_PAGE_MAX = 1_000
/** Rows read per scan when counting the hints at start. */
const COUNT_SCAN_ROWS = 10_000

export async function putHints(
  state: StoreState,
  ctx: Context,
  hints: readonly Hint[],
): Promise<Result<null>> {
  const ops = []
  const seen = new Set<string>()
  /** Replicas this batch adds a record for, and how many. */
  const added = new Map<string, number>()
  let addedAll = 0
  for (const hint of hints.slice(0, HINTS_PER_REQUEST_MAX)) {
    // Away past the TTL: the hint would expire unread; repair brings what it lacks.
    if (state.hintsClosed.has(hint.node)) continue
    const key = hintKey(hint.node, hint.bucket, hint.key)
    const held = ctx.kv.get(key)
    const heldStamp = held === undefined ? '' : Buffer.from(held).toString('utf8')
    if (heldStamp >= hint.stamp || seen.has(key)) continue
    const forNode = (state.hintsPerNode.get(hint.node) ?? 0) + (added.get(hint.node) ?? 0)
    if (
      held === undefined &&
      (state.hintsPending + addedAll >= HINTS_MAX || forNode >= HINTS_PER_NODE_MAX)
    ) {
      ctx.log.error({ node: hint.node, bucket: hint.bucket }, 'hint refused: too many kept')
      continue
    }
    if (held === undefined) {
      added.set(hint.node, (added.get(hint.node) ?? 0) + 1)
      addedAll++
    }
    seen.add(key)
    ops.push({ type: 'put' as const, key, value: new Uint8Array(Buffer.from(hint.stamp, 'utf8')) })
  }
  if (ops.length === 0) return ok(null)
  await durably(state, ctx, ctx.kv.commit(ops))
  for (const [node, count] of added) countHintsOf(state, node, count)
  return ok(null)
}

/** Moves the counts of `node`'s hints by `change`, once the batch that made it is durable. */
function countHintsOf(state: StoreState, node: string, change: number): void {
  state.hintsPending += change
  const count = (state.hintsPerNode.get(node) ?? 0) + change
  if (count === 0) state.hintsPerNode.delete(node)
  else state.hintsPerNode.set(node, count)
}

/** Takes the hint queue's list of replicas away longer than the TTL, which replaces the last. */
export function closeHints(state: StoreState, nodes: readonly string[]): Result<null> {
  if (nodes.length > MEMBERS_MAX || nodes.some((node) => typeof node !== 'string')) {
    return fail('invalid_request', `at most ${MEMBERS_MAX} replicas, by id`)
  }
  state.hintsClosed = new Set(nodes)
  return ok(null)
}

/** The hints kept, in all and per replica, counted once at start. */
export function countHints(ctx: Context): { all: number; perNode: Map<string, number> } {
  let all = 0
  const perNode = new Map<string, number>()
  let from: { gte: string } | { gt: string } = { gte: HINT_PREFIX }
  for (;;) {
    const rows = ctx.kv.scan({ ...from, lt: HINT_END, limit: COUNT_SCAN_ROWS })
    for (const [key] of rows) {
      const node = parseHintKey(key).node
      perNode.set(node, (perNode.get(node) ?? 0) + 1)
    }
    all += rows.length
    const last = rows[rows.length - 1]
    if (last === undefined || rows.length < COUNT_SCAN_ROWS) return { all, perNode }
    from = { gt: last[0] }
  }
}

/** The hints kept for `node` after `after`, in key order. */
export function pageHints(
  ctx: Context,
  node: string,
  after: { bucket: string; key: string } | null,
  limit: number,
): Result<Hint[]> {
  if (!Number.isInteger(limit) || limit < 1 || limit > HINT_PAGE_MAX) {
    return fail('invalid_request', `a page of 1 to ${HINT_PAGE_MAX} hints`)
  }
  if (node.length === 0 || node.includes('\0')) return fail('invalid_request', 'a malformed node')
  const prefix = `${HINT_PREFIX}${node}\0`
  const from = after === null ? { gte: prefix } : { gt: hintKey(node, after.bucket, after.key) }
  const rows = ctx.kv.scan({ ...from, lt: `${HINT_PREFIX}${node}\x01`, limit })
  return ok(
    rows.map(([key, value]) => ({
      ...parseHintKey(key),
      stamp: decodeText(value, 'hint'),
    })),
  )
}

/** Removes delivered or expired hints, each only if no newer one replaced it since. */
export async function hintsDone(
  state: StoreState,
  ctx: Context,
  hints: readonly Hint[],
): Promise<Result<number>> {
  if (hints.length > HINT_PAGE_MAX) {
    return fail('invalid_request', `more than ${HINT_PAGE_MAX} hints at once`)
  }
  const keys = hints.map((hint) => hintKey(hint.node, hint.bucket, hint.key))
  const held = ctx.kv.getMany(keys)
  const ops: KvOp[] = []
  const removed = new Set<string>()
  hints.forEach((hint, index) => {
    const stored = held[index]
    const key = keys[index] as string
    if (stored === undefined || removed.has(key)) return
    if (decodeText(stored, 'hint') !== hint.stamp) return
    removed.add(key)
    ops.push({ type: 'del', key })
  })
  if (ops.length === 0) return ok(0)
  await durably(state, ctx, ctx.kv.commit(ops))
  for (const key of removed) countHintsOf(state, parseHintKey(key).node, -1)
  return ok(ops.length)
}

function parseHintKey(stored: string): { node: string; bucket: string; key: string } {
  const rest = stored.slice(HINT_PREFIX.length)
  const nodeEnd = rest.indexOf('\0')
  const bucketEnd = rest.indexOf('\0', nodeEnd + 1)
  if (nodeEnd <= 0 || bucketEnd <= nodeEnd)
    throw new ServiceError('corrupt', 'a malformed hint key')
  return {
    node: rest.slice(0, nodeEnd),
    bucket: rest.slice(nodeEnd + 1, bucketEnd),
    key: rest.slice(bucketEnd + 1),
  }
}
