/** Goal: bucket lifecycle rules as Amazon S3 applies them, run by the lifecycle actor in the
 * background. A configuration round-trips through Put/Get/DeleteBucketLifecycleConfiguration and a
 * bad one is refused with S3's errors; on a clock whose day is a second (SVC_LIFECYCLE_DAY_SECS),
 * current versions under a prefix expire and others stay, noncurrent versions expire except one
 * object lock keeps, a delete marker left alone is removed, an incomplete multipart upload is
 * aborted; the counts show in `GET /api/admin/lifecycle` and in /metrics; an actor killed while it
 * works comes back and finishes (test/unit/lifecycle-actor.test.ts shows it resumes its pass). On a
 * 3-node cluster each object is expired once, by the one node that runs its bucket. Method: real
 * servers (a single node, then a 3-node cluster) driven by @aws-sdk/client-s3; every wait is a
 * bounded poll. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import {
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteBucketLifecycleCommand,
  DeleteObjectCommand,
  GetBucketLifecycleConfigurationCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectVersionsCommand,
  PutBucketLifecycleConfigurationCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  type LifecycleRule,
  type S3Client,
} from '@aws-sdk/client-s3'
import { admin, login } from '../support/admin-client.js'
import { ROOT_PASSWORD, ROOT_USERNAME, startCluster } from '../support/cluster.js'
import { failure } from '../support/s3-failure.js'
import { startServer, type TestServer } from '../support/server.js'
import { signedRequest } from '../support/signed-request.js'
import { pollUntil } from '../support/wait.js'

/** A lifecycle day of a second, and a pass every second. */
const FAST = { SVC_LIFECYCLE_DAY_SECS: '1', SVC_LIFECYCLE_INTERVAL_SECS: '1' }
/** Rules of one day act within seconds here: a day, a pass, the rounding to a day boundary. */
const ACTS_WITHIN_MS = 30_000

let server: TestServer
let s3: S3Client

test.before(async () => {
  server = await startServer({
    env: { ...FAST, SVC_ROOT_USERNAME: ROOT_USERNAME, SVC_ROOT_PASSWORD: ROOT_PASSWORD },
  })
  s3 = server.client()
})

test.after(async () => {
  s3.destroy()
  await server.stop()
  server.cleanup()
})

function rules(bucket: string, list: LifecycleRule[]) {
  return new PutBucketLifecycleConfigurationCommand({
    Bucket: bucket,
    LifecycleConfiguration: { Rules: list },
  })
}

async function exists(client: S3Client, bucket: string, key: string): Promise<boolean> {
  const head = await failure(() => client.send(new HeadObjectCommand({ Bucket: bucket, Key: key })))
  return head.status !== 404
}

async function versionIds(bucket: string, key: string): Promise<string[]> {
  const listed = await s3.send(new ListObjectVersionsCommand({ Bucket: bucket, Prefix: key }))
  return [...(listed.Versions ?? []), ...(listed.DeleteMarkers ?? [])]
    .filter((entry) => entry.Key === key)
    .map((entry) => entry.VersionId ?? '')
}

async function lifecycleStatus(on: { url: string }): Promise<Record<string, number>> {
  const token = await login(on, ROOT_USERNAME, ROOT_PASSWORD)
  const answer = await admin(on, 'GET', '/lifecycle', token)
  assert.is(answer.status, 200, answer.text)
  return answer.json as Record<string, number>
}

test('a configuration round-trips; bad ones are refused with S3 errors', async () => {
  await s3.send(new CreateBucketCommand({ Bucket: 'configured' }))
  assert.equal(
    await failure(() =>
      s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: 'configured' })),
    ),
    { name: 'NoSuchLifecycleConfiguration', status: 404 },
  )
  const rule: LifecycleRule = {
    ID: 'logs',
    Status: 'Enabled',
    Filter: { And: { Prefix: 'logs/', Tags: [{ Key: 'kind', Value: 'debug' }] } },
    Expiration: { Days: 30 },
    NoncurrentVersionExpiration: { NoncurrentDays: 7, NewerNoncurrentVersions: 2 },
  }
  const uploads: LifecycleRule = {
    ID: 'uploads',
    Status: 'Disabled',
    Filter: { Prefix: '' },
    AbortIncompleteMultipartUpload: { DaysAfterInitiation: 3 },
  }
  await s3.send(rules('configured', [rule, uploads]))
  const read = await s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: 'configured' }))
  assert.equal(read.Rules, [rule, uploads])
  const refusals: [LifecycleRule[], string][] = [
    [[{ ID: 'none', Status: 'Enabled', Filter: { Prefix: '' } }], 'InvalidRequest'],
    [[{ ...rule }, { ...rule }], 'InvalidArgument'],
    [[{ ...rule, Expiration: { Days: 0 } }], 'InvalidArgument'],
    [[{ ...rule, Transitions: [{ Days: 30, StorageClass: 'GLACIER' }] }], 'NotImplemented'],
  ]
  for (const [list, code] of refusals) {
    const refused = await failure(() => s3.send(rules('configured', list)))
    assert.is(refused.name, code, JSON.stringify(list))
  }
  await s3.send(new DeleteBucketLifecycleCommand({ Bucket: 'configured' }))
  assert.is(
    (
      await failure(() =>
        s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: 'configured' })),
      )
    ).status,
    404,
  )
})

test('current versions under a prefix expire on a shortened clock; others stay', async () => {
  await s3.send(new CreateBucketCommand({ Bucket: 'expiring' }))
  for (const key of ['tmp/a', 'tmp/b', 'keep/c']) {
    await s3.send(new PutObjectCommand({ Bucket: 'expiring', Key: key, Body: key }))
  }
  await s3.send(
    rules('expiring', [
      { ID: 'tmp', Status: 'Enabled', Filter: { Prefix: 'tmp/' }, Expiration: { Days: 1 } },
    ]),
  )
  const gone = await pollUntil(
    async () =>
      !(await exists(s3, 'expiring', 'tmp/a')) && !(await exists(s3, 'expiring', 'tmp/b')),
    ACTS_WITHIN_MS,
    250,
  )
  assert.ok(gone, 'tmp/ was not expired')
  assert.ok(await exists(s3, 'expiring', 'keep/c'), 'keep/c was expired')
  const status = await lifecycleStatus(server)
  assert.ok(status['objects_expired']! >= 2, JSON.stringify(status))
  const metrics = await (await fetch(`${server.url}/metrics`)).text()
  const expired = /^svc_lifecycle_objects_expired_total (\d+)/m.exec(metrics)
  assert.ok(Number(expired?.[1]) >= 2, 'svc_lifecycle_objects_expired_total')
  assert.match(metrics, /^svc_lifecycle_pass_progress /m)
})

test('noncurrent versions expire, but not one object lock keeps', async () => {
  const bucket = 'versions-kept'
  await s3.send(new CreateBucketCommand({ Bucket: bucket, ObjectLockEnabledForBucket: true }))
  const until = new Date(Date.now() + 24 * 60 * 60 * 1000)
  const locked = await s3.send(
    new PutObjectCommand({
      Bucket: bucket,
      Key: 'doc',
      Body: 'v1',
      ObjectLockMode: 'COMPLIANCE',
      ObjectLockRetainUntilDate: until,
    }),
  )
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'doc', Body: 'v2' }))
  const old = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'free', Body: 'v1' }))
  const current = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'free', Body: 'v2' }))
  const before = await lifecycleStatus(server)
  await s3.send(
    rules(bucket, [
      {
        ID: 'old',
        Status: 'Enabled',
        Filter: { Prefix: '' },
        NoncurrentVersionExpiration: { NoncurrentDays: 1 },
      },
    ]),
  )
  const expired = await pollUntil(
    async () => !(await versionIds(bucket, 'free')).includes(old.VersionId ?? ''),
    ACTS_WITHIN_MS,
    250,
  )
  assert.ok(expired, 'the noncurrent version of free stayed')
  assert.equal(await versionIds(bucket, 'free'), [current.VersionId])
  const kept = await pollUntil(
    async () => (await lifecycleStatus(server))['locked_skipped']! > before['locked_skipped']!,
    ACTS_WITHIN_MS,
    250,
  )
  assert.ok(kept, 'no locked version was counted as kept')
  assert.ok((await versionIds(bucket, 'doc')).includes(locked.VersionId ?? ''))
})

test('a delete marker left alone is removed; an incomplete upload is aborted', async () => {
  const bucket = 'tidied'
  await s3.send(new CreateBucketCommand({ Bucket: bucket }))
  await s3.send(
    new PutBucketVersioningCommand({
      Bucket: bucket,
      VersioningConfiguration: { Status: 'Enabled' },
    }),
  )
  const put = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'x', Body: 'x' }))
  await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'x' }))
  await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'x', VersionId: put.VersionId }))
  assert.is((await versionIds(bucket, 'x')).length, 1, 'the marker alone is left')
  await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'big' }))
  await s3.send(
    rules(bucket, [
      {
        ID: 'tidy',
        Status: 'Enabled',
        Filter: { Prefix: '' },
        Expiration: { ExpiredObjectDeleteMarker: true },
        AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 },
      },
    ]),
  )
  const tidied = await pollUntil(
    async () => {
      const uploads = await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket }))
      return (await versionIds(bucket, 'x')).length === 0 && (uploads.Uploads ?? []).length === 0
    },
    ACTS_WITHIN_MS,
    250,
  )
  assert.ok(tidied, 'the marker or the upload stayed')
  const status = await lifecycleStatus(server)
  assert.ok(status['delete_markers_removed']! >= 1)
  assert.ok(status['uploads_aborted']! >= 1)
})

test('a lifecycle actor killed while it works comes back and finishes the work', async () => {
  // Passes every 5 s at 4 actions a second: forty expiries take ten seconds.
  const env = {
    SVC_LIFECYCLE_DAY_SECS: '1',
    SVC_LIFECYCLE_INTERVAL_SECS: '5',
    SVC_LIFECYCLE_ACTIONS_PER_SECOND: '4',
    SVC_CHAOS: '1',
    SVC_ROOT_USERNAME: ROOT_USERNAME,
    SVC_ROOT_PASSWORD: ROOT_PASSWORD,
  }
  const node = await startServer({ env })
  const client = node.client()
  try {
    const buckets = Array.from({ length: 10 }, (_, index) => `resumed-${index}`)
    for (const bucket of buckets) {
      await client.send(new CreateBucketCommand({ Bucket: bucket }))
      for (let n = 0; n < 4; n++) {
        await client.send(new PutObjectCommand({ Bucket: bucket, Key: `tmp/${n}`, Body: 'x' }))
      }
      await client.send(
        rules(bucket, [
          { ID: 'tmp', Status: 'Enabled', Filter: { Prefix: 'tmp/' }, Expiration: { Days: 1 } },
        ]),
      )
    }
    const remaining = async (): Promise<number> => {
      let count = 0
      for (const bucket of buckets) {
        const listed = await client.send(new ListObjectVersionsCommand({ Bucket: bucket }))
        count += (listed.Versions ?? []).length
      }
      return count
    }
    const started = await pollUntil(async () => (await remaining()) < 40, ACTS_WITHIN_MS, 100)
    assert.ok(started, 'nothing was expired')
    const killed = await signedRequest(node.url, {
      method: 'POST',
      path: '/admin/chaos/kill/lifecycle',
    })
    assert.is(killed.status, 200, killed.body.toString())
    const finished = await pollUntil(async () => (await remaining()) === 0, 60_000, 500)
    assert.ok(finished, `${await remaining()} objects were never expired`)
    const metrics = await (await fetch(`${node.url}/metrics`)).text()
    assert.match(metrics, /^svc_actor_restarts_total\{actor="lifecycle"\} 1$/m)
  } finally {
    client.destroy()
    await node.stop()
    node.cleanup()
  }
})

test('in a 3-node cluster each object is expired once, by one node', async () => {
  const cluster = await startCluster({ nodes: 3, env: FAST })
  const client = cluster.server('n1').client()
  try {
    await client.send(new CreateBucketCommand({ Bucket: 'cluster-expiring' }))
    const keys = ['tmp/1', 'tmp/2', 'tmp/3', 'tmp/4']
    for (const key of keys) {
      await client.send(new PutObjectCommand({ Bucket: 'cluster-expiring', Key: key, Body: key }))
    }
    await client.send(
      rules('cluster-expiring', [
        { ID: 'tmp', Status: 'Enabled', Filter: { Prefix: 'tmp/' }, Expiration: { Days: 1 } },
      ]),
    )
    const gone = await pollUntil(
      async () => {
        for (const key of keys) if (await exists(client, 'cluster-expiring', key)) return false
        return true
      },
      ACTS_WITHIN_MS,
      250,
    )
    assert.ok(gone, 'the objects were not expired')
    const counts = await Promise.all(
      ['n1', 'n2', 'n3'].map(
        async (id) => (await lifecycleStatus(cluster.server(id)))['objects_expired'],
      ),
    )
    assert.is(
      counts.reduce((sum, count) => sum! + count!, 0),
      keys.length,
      `expired per node: ${counts.join(', ')}`,
    )
    assert.is(counts.filter((count) => count! > 0).length, 1, 'one node runs the bucket')
    // The cluster's repair status carries each node's lifecycle figures too.
    const repair = await signedRequest(cluster.server('n1').url, {
      method: 'GET',
      path: '/admin/cluster/repair-status',
    })
    const lifecycle = (
      JSON.parse(repair.body.toString()) as { lifecycle?: Record<string, unknown> }
    ).lifecycle
    assert.is(typeof lifecycle?.['passes_completed'], 'number', repair.body.toString())
  } finally {
    client.destroy()
    await cluster.destroy()
  }
})

test.run()
