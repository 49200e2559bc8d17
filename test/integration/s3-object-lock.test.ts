/** Goal: S3 Object Lock as Amazon S3 applies it. A bucket created with object lock has versioning
 * on for good; a version under GOVERNANCE retention is refused to a delete of its id unless the
 * request bypasses governance (and may), one under COMPLIANCE or a legal hold to every delete of
 * its id; a delete without an id only adds a marker; retention may be extended, not shortened; a
 * default retention applies to new versions; DeleteObjects refuses the protected keys alone; a
 * retention that ran out lets the version go; a forced bucket deletion does not remove locked
 * versions; a bucket without object lock refuses lock headers and requests. Method: a real server
 * (single node, 3-node cluster or gateway: test/support/s3-suite.ts) driven by
 * @aws-sdk/client-s3, and the admin API for a forced deletion. */
import * as assert from 'uvu/assert'
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectLegalHoldCommand,
  GetObjectLockConfigurationCommand,
  GetObjectRetentionCommand,
  GetBucketVersioningCommand,
  HeadObjectCommand,
  ListObjectVersionsCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  PutObjectLegalHoldCommand,
  PutObjectLockConfigurationCommand,
  PutObjectRetentionCommand,
} from '@aws-sdk/client-s3'
import { admin } from '../support/admin-client.js'
import { failure } from '../support/s3-failure.js'
import { adminToken, s3, server, test, useS3Suite } from '../support/s3-suite.js'
import { pollUntil } from '../support/wait.js'

const BUCKET = 'locked'
useS3Suite(undefined, ['governance: a delete of the version is refused'])

const DAY_MS = 24 * 60 * 60 * 1000
const PROTECTED = { name: 'AccessDenied', status: 403 }

test.before(async () => {
  await s3.send(new CreateBucketCommand({ Bucket: BUCKET, ObjectLockEnabledForBucket: true }))
})

async function putVersion(key: string, extra: object = {}): Promise<string> {
  const put = await s3.send(
    new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: `body of ${key}`, ...extra }),
  )
  assert.ok(put.VersionId, 'a version id')
  return put.VersionId
}

function deleteVersion(key: string, versionId: string, bypass = false) {
  return () =>
    s3.send(
      new DeleteObjectCommand({
        Bucket: BUCKET,
        Key: key,
        VersionId: versionId,
        ...(bypass ? { BypassGovernanceRetention: true } : {}),
      }),
    )
}

async function versionsOf(key: string): Promise<string[]> {
  const listed = await s3.send(new ListObjectVersionsCommand({ Bucket: BUCKET, Prefix: key }))
  return (listed.Versions ?? []).filter((v) => v.Key === key).map((v) => v.VersionId ?? '')
}

test('a bucket made with object lock: versioning on for good, configuration read', async () => {
  const versioning = await s3.send(new GetBucketVersioningCommand({ Bucket: BUCKET }))
  assert.is(versioning.Status, 'Enabled')
  const config = await s3.send(new GetObjectLockConfigurationCommand({ Bucket: BUCKET }))
  assert.is(config.ObjectLockConfiguration?.ObjectLockEnabled, 'Enabled')
  assert.equal(
    await failure(() =>
      s3.send(
        new PutBucketVersioningCommand({
          Bucket: BUCKET,
          VersioningConfiguration: { Status: 'Suspended' },
        }),
      ),
    ),
    { name: 'InvalidBucketState', status: 409 },
  )
})

test('governance: a delete of the version is refused, unless it bypasses governance', async () => {
  const until = new Date(Date.now() + DAY_MS)
  const id = await putVersion('gov', {
    ObjectLockMode: 'GOVERNANCE',
    ObjectLockRetainUntilDate: until,
  })
  const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'gov' }))
  assert.is(head.ObjectLockMode, 'GOVERNANCE')
  assert.is(head.ObjectLockRetainUntilDate?.toISOString(), until.toISOString())
  const retention = await s3.send(new GetObjectRetentionCommand({ Bucket: BUCKET, Key: 'gov' }))
  assert.is(retention.Retention?.Mode, 'GOVERNANCE')
  assert.equal(await failure(deleteVersion('gov', id)), PROTECTED)
  assert.equal(await versionsOf('gov'), [id])
  // A delete without a version id adds a marker and keeps the version.
  const marker = await s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: 'gov' }))
  assert.is(marker.DeleteMarker, true)
  assert.equal(await versionsOf('gov'), [id])
  // The test's key is a SuperUser's, which may bypass governance.
  await deleteVersion('gov', id, true)()
  assert.equal(await versionsOf('gov'), [])
})

test('compliance: no delete of the version, no shortening; extending is allowed', async () => {
  const until = new Date(Date.now() + DAY_MS)
  const id = await putVersion('comp', {
    ObjectLockMode: 'COMPLIANCE',
    ObjectLockRetainUntilDate: until,
  })
  assert.equal(await failure(deleteVersion('comp', id)), PROTECTED)
  assert.equal(await failure(deleteVersion('comp', id, true)), PROTECTED)
  const setRetention =
    (mode: 'GOVERNANCE' | 'COMPLIANCE', date: Date, bypass = false) =>
    () =>
      s3.send(
        new PutObjectRetentionCommand({
          Bucket: BUCKET,
          Key: 'comp',
          VersionId: id,
          Retention: { Mode: mode, RetainUntilDate: date },
          ...(bypass ? { BypassGovernanceRetention: true } : {}),
        }),
      )
  const sooner = new Date(until.getTime() - 60_000)
  assert.equal(await failure(setRetention('COMPLIANCE', sooner)), PROTECTED)
  assert.equal(await failure(setRetention('GOVERNANCE', until, true)), PROTECTED)
  const later = new Date(until.getTime() + DAY_MS)
  await setRetention('COMPLIANCE', later)()
  const read = await s3.send(
    new GetObjectRetentionCommand({ Bucket: BUCKET, Key: 'comp', VersionId: id }),
  )
  assert.is(read.Retention?.RetainUntilDate?.toISOString(), later.toISOString())
  assert.equal(await versionsOf('comp'), [id])
})

test('a legal hold refuses every delete of the version until it is lifted', async () => {
  const id = await putVersion('held', { ObjectLockLegalHoldStatus: 'ON' })
  const hold = await s3.send(new GetObjectLegalHoldCommand({ Bucket: BUCKET, Key: 'held' }))
  assert.is(hold.LegalHold?.Status, 'ON')
  assert.equal(await failure(deleteVersion('held', id, true)), PROTECTED)
  await s3.send(
    new PutObjectLegalHoldCommand({
      Bucket: BUCKET,
      Key: 'held',
      VersionId: id,
      LegalHold: { Status: 'OFF' },
    }),
  )
  await deleteVersion('held', id)()
  assert.equal(await versionsOf('held'), [])
})

test('a default retention applies to new versions; DeleteObjects refuses them alone', async () => {
  await s3.send(
    new PutObjectLockConfigurationCommand({
      Bucket: BUCKET,
      ObjectLockConfiguration: {
        ObjectLockEnabled: 'Enabled',
        Rule: { DefaultRetention: { Mode: 'COMPLIANCE', Days: 1 } },
      },
    }),
  )
  const config = await s3.send(new GetObjectLockConfigurationCommand({ Bucket: BUCKET }))
  assert.is(config.ObjectLockConfiguration?.Rule?.DefaultRetention?.Days, 1)
  // The access rules a node read hold for up to a second: wait until the default applies.
  let id = ''
  assert.ok(
    await pollUntil(
      async () => {
        id = await putVersion('defaulted')
        const head = await s3.send(
          new HeadObjectCommand({ Bucket: BUCKET, Key: 'defaulted', VersionId: id }),
        )
        return head.ObjectLockMode === 'COMPLIANCE'
      },
      10_000,
      200,
    ),
    'the default retention never applied',
  )
  const head = await s3.send(
    new HeadObjectCommand({ Bucket: BUCKET, Key: 'defaulted', VersionId: id }),
  )
  const untilMs = head.ObjectLockRetainUntilDate?.getTime() ?? 0
  assert.ok(Math.abs(untilMs - (Date.now() + DAY_MS)) < 60_000, `retained until ${untilMs}`)
  await s3.send(
    new PutObjectLockConfigurationCommand({
      Bucket: BUCKET,
      ObjectLockConfiguration: { ObjectLockEnabled: 'Enabled' },
    }),
  )
  const free = await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'free', Body: 'f' }))
  const answer = await s3.send(
    new DeleteObjectsCommand({
      Bucket: BUCKET,
      Delete: {
        Objects: [
          { Key: 'defaulted', VersionId: id },
          { Key: 'free', VersionId: free.VersionId ?? '' },
        ],
      },
    }),
  )
  assert.equal(
    answer.Deleted?.map((entry) => entry.Key),
    ['free'],
  )
  assert.equal(
    answer.Errors?.map((entry) => [entry.Key, entry.Code]),
    [['defaulted', 'AccessDenied']],
  )
  assert.ok((await versionsOf('defaulted')).includes(id))
})

test('a retention that ran out lets the version go', async () => {
  const until = new Date(Date.now() + 2_000)
  const id = await putVersion('brief', {
    ObjectLockMode: 'COMPLIANCE',
    ObjectLockRetainUntilDate: until,
  })
  assert.equal(await failure(deleteVersion('brief', id)), PROTECTED)
  assert.ok(
    await pollUntil(() => deleteVersion('brief', id)().then(() => true), 15_000, 250),
    'the version stayed protected after its date',
  )
  assert.equal(await versionsOf('brief'), [])
})

test('a forced deletion of the bucket keeps its locked versions', async () => {
  const token = await adminToken()
  const forced = await admin(server, 'DELETE', `/buckets/${BUCKET}?force=true`, token)
  assert.is(forced.status, 409, forced.text)
  assert.is((forced.json as { code: string }).code, 'BucketNotEmpty')
  assert.ok((await versionsOf('comp')).length === 1)
})

test('a bucket without object lock refuses lock headers and lock requests', async () => {
  await s3.send(new CreateBucketCommand({ Bucket: 'unlocked' }))
  const until = new Date(Date.now() + DAY_MS)
  assert.equal(
    await failure(() =>
      s3.send(
        new PutObjectCommand({
          Bucket: 'unlocked',
          Key: 'k',
          Body: 'x',
          ObjectLockMode: 'GOVERNANCE',
          ObjectLockRetainUntilDate: until,
        }),
      ),
    ),
    { name: 'InvalidRequest', status: 400 },
  )
  assert.equal(
    await failure(() => s3.send(new GetObjectLockConfigurationCommand({ Bucket: 'unlocked' }))),
    { name: 'ObjectLockConfigurationNotFoundError', status: 404 },
  )
  await s3.send(new PutObjectCommand({ Bucket: 'unlocked', Key: 'k', Body: 'x' }))
  assert.equal(
    await failure(() =>
      s3.send(
        new PutObjectLegalHoldCommand({
          Bucket: 'unlocked',
          Key: 'k',
          LegalHold: { Status: 'ON' },
        }),
      ),
    ),
    { name: 'InvalidRequest', status: 400 },
  )
  // Object lock on an existing bucket needs versioning on.
  assert.equal(
    await failure(() =>
      s3.send(
        new PutObjectLockConfigurationCommand({
          Bucket: 'unlocked',
          ObjectLockConfiguration: { ObjectLockEnabled: 'Enabled' },
        }),
      ),
    ),
    { name: 'InvalidBucketState', status: 409 },
  )
  // Bad lock headers are S3's 400s.
  for (const extra of [
    { ObjectLockMode: 'GOVERNANCE' as const },
    {
      ObjectLockMode: 'GOVERNANCE' as const,
      ObjectLockRetainUntilDate: new Date(Date.now() - DAY_MS),
    },
  ]) {
    const refused = await failure(() =>
      s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'bad', Body: 'x', ...extra })),
    )
    assert.equal(refused, { name: 'InvalidArgument', status: 400 }, JSON.stringify(extra))
  }
})

test.run()
