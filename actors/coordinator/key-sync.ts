/** @module key.sync: anti-entropy found two replicas of a key whose digests differ. Each is given
 * what the other holds and it lacks, by replaying to it the stamped changes that made those
 * records, so both end as if every change had reached both (the store orders them by stamp):
 * - where the bucket keeps no versions, the newer of the two states (by the key's stamp): its
 *   object (read repair's copy, tags included) or its deletion, which leaves the tombstone;
 * - with versions, each version the replica lacks and did not delete by id (an object of one
 *   blob, or a delete marker), each deletion by id it lacks, and the tags of a version both hold
 *   when the other holds the newer change of the key.
 * A multipart object is uploaded again to the replica alone (multipart-replay.ts). Not replayed,
 * counted `unsupported` (they stay different until a client's change): a version written before
 * versioning was configured or while it was suspended (a replay would get another id), and two
 * states with one stamp. Not replayed either, and not counted: a tombstone past the grace
 * (SVC_GC_GRACE_DAYS, by its stamp's wall clock), a deletion to a replica that holds nothing of
 * the key or a delete by id to one that lacks the version, since the replica may have purged it
 * (actors/anti-entropy/tombstone-gc.ts): replayed, it would come back there, and the pair would
 * never end alike. At most REPLAYS_MAX changes per call; the next round goes on. */
import type { Context } from '../../protocol/actor.js'
import {
  gcGraceMs,
  pastGrace,
  type KeyManifest,
  type VersionEntry,
} from '../../protocol/anti-entropy.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import type { CoordinatorMsg, KeySynced, TaggingResult } from '../../protocol/messages.js'
import type { Tag } from '../../protocol/tagging.js'
import type { ClusterState } from './cluster-state.js'
import type { GetMsg, StampedAnswer } from './reads.js'
import { replayMultipart } from './multipart-replay.js'
import { copyObject } from './repair.js'
import { askReplica } from './replica-calls.js'
import { localReplica, replicasOf, type Replica } from './replicas.js'

type SyncMsg = Extract<CoordinatorMsg, { kind: 'key.sync' }>

const REPLAYS_MAX = 100

/** One change to replay to a replica. */
type Step =
  | { kind: 'object'; entry: VersionEntry }
  | { kind: 'marker'; stamp: string }
  | { kind: 'deletion'; stamp: string }
  | { kind: 'deletion-by-id'; versionId: string; stamp: string }
  | { kind: 'tags'; entry: VersionEntry; stamp: string }

export async function syncKey(
  cluster: ClusterState,
  ctx: Context,
  msg: SyncMsg,
): Promise<Result<KeySynced>> {
  const at = { bucket: msg.bucket, key: msg.key }
  const replicas = await replicasOf(cluster, ctx, at, msg.deadlineMs)
  if (!replicas.ok) return replicas
  const pair: Replica[] = []
  for (const id of msg.nodes) {
    // This node's own store even while it is bootstrapped (then it counts in no quorum).
    const own =
      id === cluster.settings.nodeId && replicas.value.all.includes(id)
        ? localReplica(id)
        : undefined
    const replica = own ?? replicas.value.reachable.find((one) => one.id === id)
    if (replica === undefined) return fail('unavailable', `${id} is not a reachable replica`)
    pair.push(replica)
  }
  const [first, second] = pair as [Replica, Replica]
  const asked = { kind: 'key.manifest' as const, ...at, requestId: msg.requestId }
  const [one, other, versioning] = await Promise.all([
    askReplica<KeyManifest>(ctx, first, { ...asked, deadlineMs: msg.deadlineMs }),
    askReplica<KeyManifest>(ctx, second, { ...asked, deadlineMs: msg.deadlineMs }),
    ctx.call('replica-store', {
      kind: 'bucket.versioning.get',
      bucket: msg.bucket,
      requestId: msg.requestId,
      deadlineMs: msg.deadlineMs,
    }),
  ])
  if (!one.ok) return one
  if (!other.ok) return other
  if (!versioning.ok) return versioning
  const versioned = versioning.value.status !== null
  const graceMs = gcGraceMs(ctx.config)
  const nowMs = ctx.now()
  const purgeable = (stamp: string): boolean => pastGrace(stamp, nowMs, graceMs)
  const synced: KeySynced = { replayed: 0, unsupported: 0, bytes: 0 }
  for (const [from, to, source, target] of [
    [first, second, one.value, other.value],
    [second, first, other.value, one.value],
  ] as const) {
    const { steps, unsupported } = versioned
      ? versionSteps(source, target, purgeable)
      : plainSteps(source, target, purgeable)
    synced.unsupported += unsupported
    for (const step of steps.slice(0, REPLAYS_MAX - synced.replayed)) {
      const bytes = await replay(cluster, ctx, msg, from, to, step)
      if (bytes === null) {
        return fail('unavailable', `${to.id} did not take a ${step.kind} of ${msg.key}`)
      }
      synced.replayed++
      synced.bytes += bytes
    }
  }
  return ok(synced)
}

/** Whether a tombstone is past the grace: a replica that lacks it may have purged it. */
type Purgeable = (stamp: string) => boolean

function holdsNothing(manifest: KeyManifest): boolean {
  return manifest.stamp === null && manifest.versions.length === 0 && manifest.deleted.length === 0
}

/** Steps that bring `target` to `source`'s state where the bucket keeps no versions. */
function plainSteps(source: KeyManifest, target: KeyManifest, purgeable: Purgeable): Planned {
  const newest = source.stamp
  if (newest === null || (target.stamp !== null && target.stamp >= newest)) {
    // The same stamp and other records: nothing a replay can settle.
    return { steps: [], unsupported: newest !== null && newest === target.stamp ? 1 : 0 }
  }
  const current = source.versions.find((entry) => entry.current && !entry.marker)
  if (current === undefined) {
    const purged = holdsNothing(target) && purgeable(newest)
    return { steps: purged ? [] : [{ kind: 'deletion', stamp: newest }], unsupported: 0 }
  }
  if (current.stamp === undefined) return { steps: [], unsupported: 1 }
  const held = target.versions.find((entry) => entry.current && sameVersion(entry, current))
  const steps: Step[] = held === undefined ? [{ kind: 'object', entry: current }] : []
  // A newer change than the object's own: its tags were set since.
  if (current.stamp < newest) steps.push({ kind: 'tags', entry: current, stamp: newest })
  return { steps, unsupported: 0 }
}

interface Planned {
  steps: Step[]
  unsupported: number
}

/** Steps that give `target` the versions, deletions by id and tags `source` holds and it lacks. */
function versionSteps(source: KeyManifest, target: KeyManifest, purgeable: Purgeable): Planned {
  const held = new Map(target.versions.map((entry) => [entry.token, entry]))
  const deleted = new Set(target.deleted.map((one) => one.token))
  const steps: Step[] = []
  let unsupported = 0
  for (const entry of source.versions) {
    const theirs = held.get(entry.token)
    if (theirs !== undefined) {
      const newer = source.stamp !== null && (target.stamp === null || source.stamp > target.stamp)
      if (theirs.tags !== entry.tags && newer && source.stamp !== null) {
        steps.push({ kind: 'tags', entry, stamp: source.stamp })
      }
      continue
    }
    if (entry.token !== null && deleted.has(entry.token)) continue
    if (entry.token === null || entry.versionId === 'null' || entry.stamp === undefined) {
      unsupported++
    } else if (entry.marker) {
      steps.push({ kind: 'marker', stamp: entry.stamp })
    } else {
      steps.push({ kind: 'object', entry })
    }
  }
  for (const one of source.deleted) {
    const purged = !held.has(one.token) && purgeable(one.stamp)
    if (!deleted.has(one.token) && !purged) {
      steps.push({ kind: 'deletion-by-id', versionId: one.token, stamp: one.stamp })
    }
  }
  // The key's newest change wrote no version and deleted none: it set tags (of the current
  // version, as a client most often does); replayed, it also gives the replica that stamp.
  const newest = source.stamp
  const explained =
    source.versions.some((entry) => entry.stamp === newest) ||
    source.deleted.some((one) => one.stamp === newest)
  const current = source.versions.find((entry) => entry.current && !entry.marker)
  const newer = newest !== null && (target.stamp === null || newest > target.stamp)
  if (newer && !explained && current !== undefined && !steps.some((step) => step.kind === 'tags')) {
    steps.push({ kind: 'tags', entry: current, stamp: newest })
  }
  return { steps, unsupported }
}

function sameVersion(a: VersionEntry, b: VersionEntry): boolean {
  return a.token === b.token && a.stamp === b.stamp && a.etag === b.etag
}

/** Replays `step` to `to`: the bytes it copied, or null when it failed. */
async function replay(
  cluster: ClusterState,
  ctx: Context,
  msg: SyncMsg,
  from: Replica,
  to: Replica,
  step: Step,
): Promise<number | null> {
  const at = { bucket: msg.bucket, key: msg.key, requestId: msg.requestId }
  const deadlineMs = msg.deadlineMs
  const asked = (answer: Result<unknown>): number | null => (answer.ok ? 0 : null)
  switch (step.kind) {
    case 'marker':
    case 'deletion':
      return asked(
        await askReplica(ctx, to, { kind: 'object.delete', ...at, stamp: step.stamp, deadlineMs }),
      )
    case 'deletion-by-id':
      return asked(
        await askReplica(ctx, to, {
          kind: 'object.delete',
          ...at,
          versionId: step.versionId,
          stamp: step.stamp,
          deadlineMs,
        }),
      )
    case 'tags': {
      const tags = await tagsOf(ctx, from, at, step.entry, deadlineMs)
      if (tags === null) return null
      return asked(
        await askReplica(ctx, to, {
          kind: 'object.tagging.put',
          ...at,
          ...versionOf(step.entry),
          tags,
          stamp: step.stamp,
          deadlineMs,
        }),
      )
    }
    case 'object':
      return copyVersion(cluster, ctx, from, to, { ...at, deadlineMs }, step.entry)
  }
}

function versionOf(entry: VersionEntry): { versionId?: string } {
  return entry.versionId === undefined ? {} : { versionId: entry.versionId }
}

async function tagsOf(
  ctx: Context,
  from: Replica,
  at: { bucket: string; key: string; requestId: string },
  entry: VersionEntry,
  deadlineMs: number,
): Promise<Tag[] | null> {
  if (entry.tags === 0) return []
  const got = await askReplica<TaggingResult>(ctx, from, {
    kind: 'object.tagging.get',
    ...at,
    ...versionOf(entry),
    deadlineMs,
  })
  return got.ok ? got.value.tags : null
}

/** Writes one version, read from `from`, to `to` under its own stamp: the bytes it copied, or
 * null when it failed. */
async function copyVersion(
  cluster: ClusterState,
  ctx: Context,
  from: Replica,
  to: Replica,
  at: { bucket: string; key: string; requestId: string; deadlineMs: number },
  entry: VersionEntry,
): Promise<number | null> {
  const tags = await tagsOf(ctx, from, at, entry, at.deadlineMs)
  if (tags === null || entry.stamp === undefined) return null
  const version = { ...at, ...versionOf(entry) }
  if (entry.parts > 0) {
    const seen = { stamp: entry.stamp, etag: entry.etag }
    const copied = await replayMultipart(cluster, ctx, from, to, version, seen, tags)
    return copied === null ? null : copied.bytes
  }
  const read: GetMsg = { kind: 'object.get', ...version }
  const head = await askReplica<StampedAnswer>(ctx, from, { ...read, stamped: true })
  if (!head.ok || !('info' in head.value)) return null
  const answer = head.value
  if (answer.info.etag !== entry.etag || answer.info.stamp !== entry.stamp) return null
  const tagged = tags.length === 0 ? undefined : tags
  const copied = await copyObject(ctx, read, from, to, answer, at.deadlineMs, tagged)
  return copied ? answer.info.size : null
}
