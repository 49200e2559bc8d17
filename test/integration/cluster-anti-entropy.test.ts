/** Goal: anti-entropy brings a replica that missed writes and deletes, whose hints expired, to
 * hold exactly what its peers hold within a few rounds, with no read repairing it: objects,
 * overwrites, deletions of keys it held (which must not come back), and in a versioned bucket
 * new versions, a delete marker and a version deleted by id; repair-status then shows the rounds,
 * the changes repaired and, per peer, equal roots digests on both sides of each pair.
 * Method: three real nodes that each read with R = 1 (SVC_READ_QUORUM=1, per node), so a GET
 * through a node answers from its own replica and never repairs it; hints that expire within a
 * second (SVC_HINT_TTL_HOURS=0.0002) so that they bring nothing; rounds every 2 s. The chaos
 * route cuts n3 off both ways while the changes go through n1, then heals it.
 * The same for the states replicas merge by their records alone: n3 cut off while a bucket's
 * versioning is Enabled, versions and delete markers written, then Suspended and null versions
 * written, a multipart object completed, an object deleted before versioning was configured:
 * after the heal every node lists the same versions with the same bytes. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { createHash, randomBytes } from 'node:crypto'
import {
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectVersionsCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3'
import { createPlainAndVersioned, startCluster, type TestCluster } from '../support/cluster.js'
import { sample } from '../support/metrics-text.js'
import { signedRequest } from '../support/signed-request.js'
import { pollUntil } from '../support/wait.js'

let cluster: TestCluster
const NODES = ['n1', 'n2', 'n3']
const KEYS = 60
/** Rounds every 2 s: a few rounds, and the copies they make, well within this. */
const CONVERGED_WITHIN_MS = 60_000
const REJOIN_WINDOW_MS = 6_000

test.before(async () => {
  cluster = await startCluster({
    nodes: 3,
    env: {
      SVC_READ_QUORUM: '1',
      SVC_CHAOS: '1',
      SVC_HINT_TTL_HOURS: '0.0002',
      SVC_ANTI_ENTROPY_INTERVAL_SECS: '2',
      // A node down 9 s is past the window; the grace must be longer.
      SVC_MAX_REJOIN_DOWNTIME_DAYS: String(REJOIN_WINDOW_MS / 86_400_000),
      SVC_GC_GRACE_DAYS: String((2 * REJOIN_WINDOW_MS) / 86_400_000),
    },
  })
  const s3 = cluster.server('n1').client()
  await createPlainAndVersioned(s3)
})

test.after(async () => {
  await (cluster as TestCluster | undefined)?.destroy()
})

async function partition(peers: string[] | null): Promise<void> {
  const url = cluster.server('n3').url
  const answer =
    peers === null
      ? await signedRequest(url, { method: 'DELETE', path: '/admin/chaos/partition' })
      : await signedRequest(url, {
          method: 'POST',
          path: '/admin/chaos/partition',
          body: JSON.stringify({ peers }),
          headers: { 'content-type': 'application/json' },
        })
  assert.is(answer.status, 200, answer.body.toString())
}

async function md5Through(s3: S3Client, Key: string, Bucket = 'plain'): Promise<string | null> {
  try {
    const got = await s3.send(new GetObjectCommand({ Bucket, Key }))
    const body = (await got.Body?.transformToByteArray()) ?? new Uint8Array(0)
    return createHash('md5').update(body).digest('hex')
  } catch (error) {
    if ((error as { name?: string }).name === 'NoSuchKey') return null
    throw error
  }
}

/** The versioned bucket's versions and markers as `id`'s replica holds them. */
async function versionsThrough(id: string): Promise<string> {
  const listed = await cluster
    .server(id)
    .client()
    .send(new ListObjectVersionsCommand({ Bucket: 'versioned' }))
  const versions = (listed.Versions ?? []).map((v) => `${v.Key} ${v.VersionId} ${v.ETag}`)
  const markers = (listed.DeleteMarkers ?? []).map((m) => `${m.Key} ${m.VersionId} marker`)
  return [...versions, ...markers].sort().join('\n')
}

interface RepairStatus {
  anti_entropy: {
    rounds: number
    items_repaired: number
    peers: { node: string; roots_digest: string | null; diverged: number }[]
  }
  hints: { pending: number; expired: number }
}

async function repairStatus(id: string): Promise<RepairStatus> {
  const answer = await signedRequest(cluster.server(id).url, {
    method: 'GET',
    path: '/admin/cluster/repair-status',
  })
  assert.is(answer.status, 200)
  return JSON.parse(answer.body.toString()) as RepairStatus
}

/** Whether both sides of every pair of nodes last saw the same roots. */
async function rootsAgree(): Promise<boolean> {
  const statuses = new Map<string, RepairStatus>()
  for (const id of NODES) statuses.set(id, await repairStatus(id))
  for (const id of NODES) {
    for (const peer of statuses.get(id)?.anti_entropy.peers ?? []) {
      const back = statuses.get(peer.node)?.anti_entropy.peers.find((one) => one.node === id)
      if (peer.roots_digest === null || back?.roots_digest !== peer.roots_digest) return false
    }
  }
  return true
}

test('a replica whose hints expired holds what its peers hold within a few rounds', async () => {
  const s3 = cluster.server('n1').client()
  // Held by n3 before the cut: a third are overwritten, a third deleted while it is away.
  const expected = new Map<string, string | null>()
  for (let index = 0; index < KEYS / 2; index++) {
    const Body = randomBytes(index % 10 === 0 ? 150_000 : 500 + index)
    await s3.send(new PutObjectCommand({ Bucket: 'plain', Key: `old${index}`, Body }))
    expected.set(`old${index}`, createHash('md5').update(Body).digest('hex'))
  }
  const kept = await s3.send(new PutObjectCommand({ Bucket: 'versioned', Key: 'v', Body: 'one' }))
  await partition(['n1', 'n2'])
  for (let index = 0; index < KEYS / 2; index++) {
    const Key = `old${index}`
    if (index % 3 === 0) {
      await s3.send(new DeleteObjectCommand({ Bucket: 'plain', Key }))
      expected.set(Key, null)
    } else if (index % 3 === 1) {
      const Body = randomBytes(800 + index)
      await s3.send(new PutObjectCommand({ Bucket: 'plain', Key, Body }))
      expected.set(Key, createHash('md5').update(Body).digest('hex'))
    }
    const Body = randomBytes(index % 10 === 5 ? 120_000 : 300 + index)
    await s3.send(new PutObjectCommand({ Bucket: 'plain', Key: `new${index}`, Body }))
    expected.set(`new${index}`, createHash('md5').update(Body).digest('hex'))
  }
  await s3.send(new PutObjectCommand({ Bucket: 'versioned', Key: 'v', Body: 'two' }))
  await s3.send(new PutObjectCommand({ Bucket: 'versioned', Key: 'w', Body: 'three' }))
  await s3.send(new DeleteObjectCommand({ Bucket: 'versioned', Key: 'w' }))
  await s3.send(
    new DeleteObjectCommand({ Bucket: 'versioned', Key: 'v', VersionId: kept.VersionId }),
  )
  const n3 = cluster.server('n3').client()
  assert.is(await md5Through(n3, 'new0'), null, 'n3 missed the writes')
  await partition(null)
  // Older than their TTL by now: the hint queue drops them, and only anti-entropy can bring n3
  // the changes.
  const dropped = async (): Promise<boolean> => (await repairStatus('n1')).hints.pending === 0
  assert.ok(await pollUntil(dropped, 20_000), 'the hints were not dropped')

  const converged = await pollUntil(
    async () => {
      for (const [Key, md5] of expected) if ((await md5Through(n3, Key)) !== md5) return false
      return (await versionsThrough('n3')) === (await versionsThrough('n1'))
    },
    CONVERGED_WITHIN_MS,
    1_000,
  )
  for (const [Key, md5] of expected) assert.is(await md5Through(n3, Key), md5, `${Key} via n3`)
  assert.is(await versionsThrough('n3'), await versionsThrough('n1'))
  assert.ok(converged)
  assert.ok(await pollUntil(rootsAgree, 20_000, 1_000), 'the roots digests differ')
  const status = await repairStatus('n1')
  assert.ok(status.hints.expired > 0, 'hints expired')
  assert.ok(status.anti_entropy.rounds > 0)
  const repaired = (await Promise.all(NODES.map(repairStatus))).reduce(
    (sum, one) => sum + one.anti_entropy.items_repaired,
    0,
  )
  assert.ok(repaired >= KEYS / 2, `${repaired} changes repaired`)
  const metrics = await (await fetch(`${cluster.server('n1').url}/metrics`)).text()
  assert.type(sample(metrics, 'svc_cluster_ae_items_repaired_total'), 'number')
})

/** Every version and marker of `Bucket` as `id` lists them, with each version's bytes read
 * through `id` (R = 1: its own replica). */
async function versionsAndBytes(id: string, Bucket: string): Promise<string> {
  const s3 = cluster.server(id).client()
  const listed = await s3.send(new ListObjectVersionsCommand({ Bucket }))
  const lines: string[] = []
  for (const v of listed.Versions ?? []) {
    const got = await s3.send(
      new GetObjectCommand({ Bucket, Key: v.Key, VersionId: v.VersionId as string }),
    )
    const body = (await got.Body?.transformToByteArray()) ?? new Uint8Array(0)
    const md5 = createHash('md5').update(body).digest('hex')
    const when = v.LastModified?.toISOString() ?? ''
    lines.push(`${v.Key} ${v.VersionId} ${v.ETag} ${v.Size} ${when} ${v.IsLatest} ${md5}`)
  }
  for (const m of listed.DeleteMarkers ?? []) {
    lines.push(
      `${m.Key} ${m.VersionId} ${m.LastModified?.toISOString() ?? ''} ${m.IsLatest} marker`,
    )
  }
  return lines.sort().join('\n')
}

test('n3 misses versions, markers, null versions, a multipart object: all converge', async () => {
  const s3 = cluster.server('n1').client()
  const Bucket = 'suspended'
  await s3.send(new CreateBucketCommand({ Bucket }))
  // Written before versioning was configured, on every node; n3 then misses a deletion and an
  // overwrite of them.
  await s3.send(new PutObjectCommand({ Bucket, Key: 'pre', Body: 'before versioning' }))
  await s3.send(new PutObjectCommand({ Bucket, Key: 'gone', Body: 'deleted unversioned' }))
  await partition(['n1', 'n2'])
  await s3.send(new DeleteObjectCommand({ Bucket, Key: 'gone' }))
  await s3.send(new PutObjectCommand({ Bucket, Key: 'pre', Body: 'overwritten unversioned' }))
  await partition(null)
  // A bucket's versioning changes on every node (the catalog), so n3 is back for each change.
  await setVersioning(Bucket, 'Enabled')
  await partition(['n1', 'n2'])
  for (let index = 0; index < 3; index++) {
    await s3.send(new PutObjectCommand({ Bucket, Key: 'pre', Body: `enabled ${index}` }))
    await s3.send(new PutObjectCommand({ Bucket, Key: `v${index}`, Body: `version ${index}` }))
  }
  await s3.send(new DeleteObjectCommand({ Bucket, Key: 'v0' }))
  await s3.send(new DeleteObjectCommand({ Bucket, Key: 'v1' }))
  await s3.send(new PutObjectCommand({ Bucket, Key: 'v1', Body: 'after the marker' }))
  await multipartObject(s3, Bucket, 'multi')
  await partition(null)
  await setVersioning(Bucket, 'Suspended')
  await partition(['n1', 'n2'])
  await s3.send(new PutObjectCommand({ Bucket, Key: 'pre', Body: 'suspended null' }))
  await s3.send(new PutObjectCommand({ Bucket, Key: 'v2', Body: 'suspended null of v2' }))
  await s3.send(new DeleteObjectCommand({ Bucket, Key: 'v1' }))
  await multipartObject(s3, Bucket, 'multi')
  const n3 = cluster.server('n3').client()
  const missed = await md5Through(n3, 'v2', Bucket)
  assert.is.not(missed, md5Of('suspended null of v2'), 'n3 missed the null version')
  await partition(null)
  const dropped = async (): Promise<boolean> => (await repairStatus('n1')).hints.pending === 0
  assert.ok(await pollUntil(dropped, 20_000), 'the hints were not dropped')
  // Only anti-entropy brings n3 the last changes: every version, its bytes and its id alike.
  const alike = async (): Promise<boolean> =>
    (await versionsAndBytes('n3', Bucket)) === (await versionsAndBytes('n1', Bucket))
  const converged = await pollUntil(alike, CONVERGED_WITHIN_MS, 1_000)
  assert.is(await versionsAndBytes('n3', Bucket), await versionsAndBytes('n1', Bucket))
  assert.ok(converged)
  assert.is(await md5Through(n3, 'gone', Bucket), null, 'a deleted object came back')
  assert.is(await md5Through(n3, 'pre', Bucket), md5Of('suspended null'))
  const status = await repairStatus('n1')
  assert.is((status.anti_entropy as { unsupported?: number }).unsupported, 0)
})

function md5Of(text: string): string {
  return createHash('md5').update(text).digest('hex')
}

/** PutBucketVersioning through n1, again while the catalog cannot reach every node yet. */
async function setVersioning(Bucket: string, Status: 'Enabled' | 'Suspended'): Promise<void> {
  const s3 = cluster.server('n1').client()
  const set = async (): Promise<boolean> => {
    try {
      await s3.send(new PutBucketVersioningCommand({ Bucket, VersioningConfiguration: { Status } }))
      return true
    } catch {
      return false
    }
  }
  assert.ok(await pollUntil(set, 30_000, 500), `versioning not ${Status}`)
}

/** A multipart object of two parts (the first of S3's least size) completed at `Key`. */
async function multipartObject(s3: S3Client, Bucket: string, Key: string): Promise<void> {
  const created = await s3.send(new CreateMultipartUploadCommand({ Bucket, Key }))
  const UploadId = created.UploadId as string
  const parts = []
  for (const [index, Body] of [randomBytes(5 * 1024 * 1024), randomBytes(1_000)].entries()) {
    const PartNumber = index + 1
    const part = await s3.send(new UploadPartCommand({ Bucket, Key, UploadId, PartNumber, Body }))
    parts.push({ PartNumber, ETag: part.ETag as string })
  }
  const MultipartUpload = { Parts: parts }
  await s3.send(new CompleteMultipartUploadCommand({ Bucket, Key, UploadId, MultipartUpload }))
}

async function nodeHealth(id: string): Promise<{ phase: string }> {
  const answer = await signedRequest(cluster.server(id).url, {
    method: 'GET',
    path: '/admin/node/health',
  })
  return JSON.parse(answer.body.toString()) as { phase: string }
}

test('a node down past the rejoin window serves nothing until a bootstrap syncs it', async () => {
  const s3 = cluster.server('n1').client()
  await s3.send(new PutObjectCommand({ Bucket: 'plain', Key: 'kept', Body: 'before' }))
  await s3.send(new PutObjectCommand({ Bucket: 'plain', Key: 'doomed', Body: 'before' }))
  assert.is(await cluster.server('n3').stop(), 0)
  const late = randomBytes(70_000)
  await s3.send(new PutObjectCommand({ Bucket: 'plain', Key: 'late', Body: late }))
  await s3.send(new DeleteObjectCommand({ Bucket: 'plain', Key: 'doomed' }))
  // Down longer than the window (wall clock: the node's note of being alive is older).
  await new Promise((resolve) => setTimeout(resolve, REJOIN_WINDOW_MS + 2_000))
  await cluster.restart('n3', false)
  const stale = async (): Promise<boolean> => (await nodeHealth('n3')).phase === 'needs_bootstrap'
  assert.ok(await pollUntil(stale, 30_000), 'n3 is not needs_bootstrap')
  assert.is((await fetch(`${cluster.server('n3').url}/health`)).status, 503)
  // The others count it in no quorum but go on: W = 2 of n1 and n2.
  await s3.send(new PutObjectCommand({ Bucket: 'plain', Key: 'meanwhile', Body: 'w' }))
  const url = cluster.server('n3').url
  const refused = await signedRequest(url, {
    method: 'POST',
    path: '/admin/node/bootstrap',
    body: JSON.stringify({}),
    headers: { 'content-type': 'application/json' },
  })
  assert.is(refused.status, 400)
  const started = await signedRequest(url, {
    method: 'POST',
    path: '/admin/node/bootstrap',
    body: JSON.stringify({ confirm: 'wipe-and-resync' }),
    headers: { 'content-type': 'application/json' },
  })
  assert.is(started.status, 202, started.body.toString())
  assert.type((JSON.parse(started.body.toString()) as { job_id: string }).job_id, 'string')
  const done = async (): Promise<boolean> => {
    const status = (await repairStatus('n3')) as RepairStatus & { bootstrap: { state: string } }
    assert.is.not(status.bootstrap.state, 'failed', JSON.stringify(status.bootstrap))
    return status.bootstrap.state === 'done'
  }
  assert.ok(await pollUntil(done, CONVERGED_WITHIN_MS, 500), 'the bootstrap did not finish')
  assert.ok(await pollUntil(async () => (await nodeHealth('n3')).phase === 'serving', 10_000))
  assert.is((await fetch(`${url}/health`)).status, 200)
  const n3 = cluster.server('n3').client()
  assert.is(await md5Through(n3, 'late'), createHash('md5').update(late).digest('hex'))
  assert.is(await md5Through(n3, 'kept'), createHash('md5').update('before').digest('hex'))
  assert.is(await md5Through(n3, 'meanwhile'), createHash('md5').update('w').digest('hex'))
  assert.is(await md5Through(n3, 'doomed'), null, 'a key deleted while n3 was down came back')
})

test.run()
