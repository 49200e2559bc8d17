/** @module Listings across replicas (CLUSTER.md section 4): every reachable node of the bucket's
 * pool lists its own page, and the pages merge into one. The merged page is whole only up to the
 * lowest last entry of a truncated page (past it some replica said nothing yet), and only when
 * every partition had R of its replicas answer. A key listed by some replicas and not by others
 * is either new to those (a write they missed) or deleted there: the others are asked what they
 * hold of it now (its newest change, and its current object), and the newest change decides: a
 * deletion hides the key, and an object written there since their page was made is listed.
 * Versions and uploads merge the same way, asking whether a version was deleted by id or an upload
 * ended. Pages are the store's own, so the answer's shape and pagination are a single node's. */
import type { Context } from '../../protocol/actor.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import { compareUtf8 } from '../../protocol/key-order.js'
import type {
  KeyHead,
  ObjectMsg,
  PartInfo,
  PartListing,
  UploadListing,
  UploadState,
  UploadSummary,
  VersionEntry,
  VersionListing,
} from '../../protocol/messages.js'
import { objectAt, objectColumns } from '../../protocol/object-columns.js'
import type { ListPage, ObjectSummary } from '../../protocol/objects.js'
import { partitionOf } from '../../protocol/placement.js'
import type { ClusterState } from './cluster-state.js'
import { gather, HEDGE_MS, quorumFailure } from './quorum.js'
import { askReplica, type ReplicaMsg } from './replica-calls.js'
import { covers, poolLayout, replicasOf, type Replica } from './replicas.js'

interface Answered<T> {
  replica: Replica
  page: T
}

/** Asks all `count` at once and waits for every answer, but once those answered `suffice`, the
 * others get HEDGE_MS more: a node that hangs (a frozen process, whose calls wait for their
 * deadline) costs a listing that much, not its deadline. One still silent then counts as failed. */
function askAll<T>(
  count: number,
  ask: (index: number) => Promise<Result<T>>,
  suffice: (answered: number[]) => boolean,
  ctx: Context,
): Promise<Result<T>[]> {
  const silent = fail('timeout', `no answer within ${HEDGE_MS} ms of a quorum's`)
  const results: Result<T>[] = Array.from({ length: count }, () => silent)
  return new Promise((resolve) => {
    const answered: number[] = []
    let settled = 0
    let finished = false
    let cancel: (() => void) | null = null
    const done = (): void => {
      if (finished) return
      finished = true
      cancel?.()
      resolve([...results])
    }
    if (count === 0) return done()
    for (let index = 0; index < count; index++) {
      void ask(index).then((result) => {
        if (finished) return
        results[index] = result
        settled++
        if (result.ok) answered.push(index)
        if (settled === count) return done()
        if (cancel === null && suffice(answered)) cancel = ctx.after(HEDGE_MS, done)
      })
    }
  })
}

/** Asks every reachable node of the pool for its page; fails unless R cover every partition. */
async function pagesOf<T>(
  cluster: ClusterState,
  ctx: Context,
  bucket: string,
  msg: ReplicaMsg,
): Promise<Result<{ pages: Answered<T>[]; table: string[][] }>> {
  const layout = await poolLayout(cluster, ctx, bucket, msg.deadlineMs)
  if (!layout.ok) return layout
  const { reachable, table } = layout.value
  const need = cluster.settings.readQuorum
  const results = await askAll(
    reachable.length,
    (index) => askReplica<T>(ctx, reachable[index] as Replica, msg),
    (answered) => covers(table, new Set(answered.map((index) => reachable[index]?.id ?? '')), need),
    ctx,
  )
  const pages: Answered<T>[] = []
  results.forEach((result, index) => {
    if (result.ok) pages.push({ replica: reachable[index] as Replica, page: result.value })
  })
  const answered = new Set(pages.map((answer) => answer.replica.id))
  if (!covers(table, answered, cluster.settings.readQuorum)) {
    const failures = results.flatMap((result) =>
      result.ok ? [] : [{ index: 0, code: result.code, detail: result.detail }],
    )
    return quorumFailure('read', { oks: [], failures }, cluster.settings.readQuorum)
  }
  cluster.counters.quorumReads++
  return ok({ pages, table })
}

/** An entry some replicas listed: `item` names it in a point check, `key` is its object key. */
interface Listed {
  item: string
  key: string
  by: ReadonlySet<string>
}

/** Asks each replica that answered, holds an entry's partition and did not list it about those
 * entries, in one request per replica (asked twice when the first fails: a lost call); its answers
 * by item, per replica. A replica that answers neither fails the listing: its page's silence about
 * an entry may be a deletion, which only its answer tells. */
async function askSilent<T>(
  ctx: Context,
  pages: readonly Answered<unknown>[],
  table: readonly string[][],
  bucket: string,
  listed: Iterable<Listed>,
  ask: (items: string[]) => ReplicaMsg,
): Promise<Result<Map<string, Map<string, T>>>> {
  const questions = new Map<string, string[]>()
  for (const { item, key, by } of listed) {
    const replicas = table[partitionOf(bucket, key)] as string[]
    for (const { replica } of pages) {
      if (!replicas.includes(replica.id) || by.has(replica.id)) continue
      const items = questions.get(replica.id) ?? []
      items.push(item)
      questions.set(replica.id, items)
    }
  }
  const answers = new Map<string, Map<string, T>>()
  let silent: string | null = null
  await Promise.all(
    [...questions].map(async ([id, items]) => {
      const replica = pages.find((answer) => answer.replica.id === id)?.replica
      if (replica === undefined) return
      let result = await askReplica<T[]>(ctx, replica, ask(items))
      if (!result.ok) result = await askReplica<T[]>(ctx, replica, ask(items))
      if (!result.ok) {
        silent = id
        return
      }
      answers.set(id, new Map(items.map((item, index) => [item, result.value[index] as T])))
    }),
  )
  if (silent !== null) return fail('unavailable', `replica ${silent} did not answer a point check`)
  return ok(answers)
}

function summaryOf(object: NonNullable<KeyHead['object']>, withContentType: boolean) {
  const { key, size, etag, lastModifiedMs, contentType } = object
  const summary: ObjectSummary = { key, size, etag, lastModifiedMs }
  if (withContentType) summary.contentType = contentType
  return summary
}

/** The lowest last entry of the truncated pages: the merged page is whole up to there. */
function boundOf(lasts: (string | null)[]): string | null {
  let bound: string | null = null
  for (const last of lasts) {
    if (last === null) continue
    if (bound === null || compareUtf8(last, bound) < 0) bound = last
  }
  return bound
}

function within(bound: string | null, key: string): boolean {
  return bound === null || compareUtf8(key, bound) <= 0
}

type ListMsg = Extract<ObjectMsg, { kind: 'object.list' }>

export async function listObjects(
  cluster: ClusterState,
  ctx: Context,
  msg: ListMsg,
): Promise<Result<ListPage>> {
  const asked = await pagesOf<ListPage>(cluster, ctx, msg.bucket, { ...msg, withStamps: true })
  if (!asked.ok) return asked
  const { pages, table } = asked.value
  const bound = boundOf(pages.map(({ page }) => (page.truncated ? page.lastReturned : null)))
  const newest = new Map<string, { summary: ObjectSummary; stamp: string; by: Set<string> }>()
  const prefixes = new Set<string>()
  for (const { replica, page } of pages) {
    page.commonPrefixes.filter((prefix) => within(bound, prefix)).forEach((p) => prefixes.add(p))
    page.objects.keys.forEach((key, index) => {
      if (!within(bound, key)) return
      const stamp = page.objects.stamps?.[index] ?? ''
      const held = newest.get(key)
      if (held === undefined || stamp > held.stamp) {
        const by = held?.by ?? new Set<string>()
        newest.set(key, { summary: objectAt(page.objects, index), stamp, by })
      }
      newest.get(key)?.by.add(replica.id)
    })
  }
  const listedKeys = [...newest].map(([key, entry]) => ({ item: key, key, by: entry.by }))
  const heads = await askSilent<KeyHead>(ctx, pages, table, msg.bucket, listedKeys, (keys) => ({
    kind: 'object.heads',
    bucket: msg.bucket,
    keys,
    requestId: msg.requestId,
    deadlineMs: msg.deadlineMs,
  }))
  if (!heads.ok) return heads
  const live: [string, ObjectSummary][] = []
  for (const [key, entry] of newest) {
    let stamp = entry.stamp
    let summary: ObjectSummary | null = entry.summary
    for (const held of heads.value.values()) {
      const head = held.get(key)
      if (head === undefined) continue
      // A silent replica's current object newer than the one listed replaces it (written there
      // after its page was made); a newest change with no current object is a deletion.
      const changed = head.object?.stamp ?? head.stamp
      if (changed === null || changed <= stamp) continue
      stamp = changed
      summary = head.object === null ? null : summaryOf(head.object, msg.withContentType === true)
    }
    if (summary !== null) live.push([key, summary])
  }
  type Item = { name: string; summary: ObjectSummary | null }
  const items: Item[] = [
    ...live.map(([name, summary]) => ({ name, summary })),
    ...[...prefixes].map((name) => ({ name, summary: null })),
  ].sort((a, b) => compareUtf8(a.name, b.name))
  const taken = items.slice(0, msg.maxKeys)
  const summaries = taken.flatMap((item) => (item.summary === null ? [] : [item.summary]))
  return ok({
    objects: objectColumns(summaries, msg.withContentType === true),
    commonPrefixes: taken.filter((item) => item.summary === null).map((item) => item.name),
    truncated: bound !== null || items.length > taken.length,
    lastReturned: taken.at(-1)?.name ?? '',
  })
}

type VersionsMsg = Extract<ObjectMsg, { kind: 'object.list-versions' }>

/** Where a version sorts within its key: newest first. A version id is its token (which sorts
 * so); the `null` version sorts by its time. */
function versionRank(entry: { versionId: string; lastModifiedMs: number }): string {
  if (entry.versionId !== 'null') return entry.versionId
  return String(9_999_999_999_999_999 - entry.lastModifiedMs * 1000).padStart(16, '0') + 'ffffffff'
}

function compareVersions(a: VersionEntry, b: VersionEntry): number {
  return (
    compareUtf8(a.key, b.key) ||
    (versionRank(a) < versionRank(b) ? -1 : versionRank(a) > versionRank(b) ? 1 : 0)
  )
}

export async function listVersions(
  cluster: ClusterState,
  ctx: Context,
  msg: VersionsMsg,
): Promise<Result<VersionListing>> {
  const asked = await pagesOf<VersionListing>(cluster, ctx, msg.bucket, msg)
  if (!asked.ok) return asked
  const { pages, table } = asked.value
  // The bound is a (key, version) position; a truncated page's last entry is where it stopped.
  let bound: VersionEntry | null = null
  let boundPrefix: string | null = null
  for (const { page } of pages) {
    if (!page.truncated) continue
    const last = page.versions.at(-1)
    const lastPrefix = page.commonPrefixes.at(-1)
    if (page.nextVersionIdMarker === null && lastPrefix !== undefined) {
      if (boundPrefix === null || compareUtf8(lastPrefix, boundPrefix) < 0) boundPrefix = lastPrefix
    } else if (last !== undefined && (bound === null || compareVersions(last, bound) < 0)) {
      bound = last
    }
  }
  const inside = (entry: VersionEntry): boolean =>
    (bound === null || compareVersions(entry, bound) <= 0) &&
    (boundPrefix === null || compareUtf8(entry.key, boundPrefix) <= 0)
  const insidePrefix = (prefix: string): boolean =>
    (boundPrefix === null || compareUtf8(prefix, boundPrefix) <= 0) &&
    (bound === null || compareUtf8(prefix, bound.key) <= 0)
  const versions = new Map<string, { entry: VersionEntry; by: Set<string>; latest: boolean }>()
  const prefixes = new Set<string>()
  for (const { replica, page } of pages) {
    page.commonPrefixes.filter(insidePrefix).forEach((prefix) => prefixes.add(prefix))
    for (const entry of page.versions.filter(inside)) {
      const id = `${entry.key}\0${entry.versionId}`
      const held = versions.get(id) ?? { entry, by: new Set<string>(), latest: false }
      held.by.add(replica.id)
      held.latest ||= entry.isLatest
      versions.set(id, held)
    }
  }
  // A `null` version is replaced rather than deleted by id: no tombstone to ask about.
  const listedVersions = [...versions]
    .filter(([, held]) => held.entry.versionId !== 'null')
    .map(([id, held]) => ({ item: id, key: held.entry.key, by: held.by }))
  const deleted = await askSilent<boolean>(
    ctx,
    pages,
    table,
    msg.bucket,
    listedVersions,
    (ids) => ({
      kind: 'object.versions-deleted',
      bucket: msg.bucket,
      versions: ids.map((id) => {
        const [key, versionId] = id.split('\0') as [string, string]
        return { key, versionId }
      }),
      requestId: msg.requestId,
      deadlineMs: msg.deadlineMs,
    }),
  )
  if (!deleted.ok) return deleted
  const kept = [...versions]
    .filter(([id]) => [...deleted.value.values()].every((answers) => answers.get(id) !== true))
    .map(([, held]) => ({ ...held.entry, isLatest: held.latest }))
    .sort(compareVersions)
  // A version is the latest only if no newer one of its key is listed.
  kept.forEach((entry, index) => {
    const previous = kept[index - 1]
    if (previous !== undefined && previous.key === entry.key) entry.isLatest = false
  })
  type Item = { key: string; entry: VersionEntry | null }
  const items: Item[] = [
    ...kept.map((entry) => ({ key: entry.key, entry })),
    ...[...prefixes].map((key) => ({ key, entry: null })),
  ].sort((a, b) =>
    a.entry !== null && b.entry !== null
      ? compareVersions(a.entry, b.entry)
      : compareUtf8(a.key, b.key),
  )
  const taken = items.slice(0, msg.maxKeys)
  const truncated = bound !== null || boundPrefix !== null || items.length > taken.length
  const last = taken.at(-1)
  return ok({
    versions: taken.flatMap((item) => (item.entry === null ? [] : [item.entry])),
    commonPrefixes: taken.filter((item) => item.entry === null).map((item) => item.key),
    truncated,
    nextKeyMarker: truncated && last !== undefined ? last.key : null,
    nextVersionIdMarker: truncated && last?.entry != null ? last.entry.versionId : null,
  })
}

type UploadsMsg = Extract<ObjectMsg, { kind: 'upload.list' }>

function compareUploads(a: UploadSummary, b: UploadSummary): number {
  return (
    compareUtf8(a.key, b.key) || (a.uploadId < b.uploadId ? -1 : a.uploadId > b.uploadId ? 1 : 0)
  )
}

export async function listUploads(
  cluster: ClusterState,
  ctx: Context,
  msg: UploadsMsg,
): Promise<Result<UploadListing>> {
  const asked = await pagesOf<UploadListing>(cluster, ctx, msg.bucket, msg)
  if (!asked.ok) return asked
  const { pages, table } = asked.value
  let bound: UploadSummary | null = null
  for (const { page } of pages) {
    if (!page.truncated || page.nextKeyMarker === null) continue
    const last = {
      key: page.nextKeyMarker,
      uploadId: page.nextUploadIdMarker ?? '\uffff',
      initiatedMs: 0,
    }
    if (bound === null || compareUploads(last, bound) < 0) bound = last
  }
  const inside = (upload: UploadSummary): boolean =>
    bound === null || compareUploads(upload, bound) <= 0
  const uploads = new Map<string, { upload: UploadSummary; by: Set<string> }>()
  const prefixes = new Set<string>()
  for (const { replica, page } of pages) {
    for (const prefix of page.commonPrefixes) {
      if (bound === null || compareUtf8(prefix, bound.key) <= 0) prefixes.add(prefix)
    }
    for (const upload of page.uploads.filter(inside)) {
      const held = uploads.get(upload.uploadId) ?? { upload, by: new Set<string>() }
      held.by.add(replica.id)
      uploads.set(upload.uploadId, held)
    }
  }
  const listedUploads = [...uploads].map(([id, held]) => ({
    item: id,
    key: held.upload.key,
    by: held.by,
  }))
  const states = await askSilent<UploadState>(
    ctx,
    pages,
    table,
    msg.bucket,
    listedUploads,
    (uploadIds) => ({
      kind: 'upload.states',
      bucket: msg.bucket,
      uploadIds,
      requestId: msg.requestId,
      deadlineMs: msg.deadlineMs,
    }),
  )
  if (!states.ok) return states
  const open = [...uploads]
    .filter(([id]) => [...states.value.values()].every((answers) => answers.get(id) !== 'ended'))
    .map(([, held]) => held.upload)
  type Item = { key: string; upload: UploadSummary | null }
  const items: Item[] = [
    ...open.map((upload) => ({ key: upload.key, upload })),
    ...[...prefixes].map((key) => ({ key, upload: null })),
  ].sort((a, b) =>
    a.upload !== null && b.upload !== null
      ? compareUploads(a.upload, b.upload)
      : compareUtf8(a.key, b.key),
  )
  const taken = items.slice(0, msg.maxUploads)
  const truncated = bound !== null || items.length > taken.length
  const last = taken.at(-1)
  return ok({
    uploads: taken.flatMap((item) => (item.upload === null ? [] : [item.upload])),
    commonPrefixes: taken.filter((item) => item.upload === null).map((item) => item.key),
    truncated,
    nextKeyMarker: truncated && last !== undefined ? last.key : null,
    nextUploadIdMarker: truncated && last?.upload != null ? last.upload.uploadId : null,
  })
}

type PartsMsg = Extract<ObjectMsg, { kind: 'upload.list-parts' }>

/** ListParts: R of the key's replicas; each part number from the newest upload of it. */
export async function listParts(
  cluster: ClusterState,
  ctx: Context,
  msg: PartsMsg,
): Promise<Result<PartListing>> {
  const set = await replicasOf(cluster, ctx, msg, msg.deadlineMs)
  if (!set.ok) return set
  const need = cluster.settings.readQuorum
  const gathered = await gather(
    set.value.reachable.map((replica) => askReplica<PartListing>(ctx, replica, msg)),
    need,
  )
  if (gathered.oks.length < need) return quorumFailure('read', gathered, need)
  cluster.counters.quorumReads++
  const listings = gathered.oks.map(({ value }) => value)
  let bound: number | null = null
  for (const listing of listings) {
    if (listing.truncated && (bound === null || listing.nextPartNumberMarker < bound)) {
      bound = listing.nextPartNumberMarker
    }
  }
  const parts = new Map<number, PartInfo>()
  for (const listing of listings) {
    for (const part of listing.parts) {
      if (bound !== null && part.partNumber > bound) continue
      const held = parts.get(part.partNumber)
      if (held === undefined || (part.stamp ?? '') > (held.stamp ?? ''))
        parts.set(part.partNumber, part)
    }
  }
  const sorted = [...parts.values()].sort((a, b) => a.partNumber - b.partNumber)
  const taken = sorted.slice(0, msg.maxParts)
  const first = listings[0] as PartListing
  const truncated = bound !== null || sorted.length > taken.length
  return ok({
    ...first,
    parts: taken.map(({ stamp: _stamp, ...part }) => part),
    truncated,
    nextPartNumberMarker: taken.at(-1)?.partNumber ?? msg.afterPartNumber,
  })
}
