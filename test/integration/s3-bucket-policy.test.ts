/** Goal: bucket policies and canned ACLs decide access as Amazon S3's do. Put/Get/Delete
 * BucketPolicy and GetBucketPolicyStatus round-trip, a malformed policy is MalformedPolicy with its
 * reason; a public-read policy lets curl GET an object with no credentials while writes stay
 * refused; an explicit Deny (by aws:SourceIp) refuses even a SuperUser, who can still remove the
 * policy; s3:prefix narrows an anonymous listing; DeleteObjects refuses the denied keys alone; a
 * copy needs the right to read its source; the canned ACLs public-read of a bucket and of an
 * object admit anonymous listings and reads, and GetBucketAcl/GetObjectAcl say what holds. Method:
 * a real server (single node, 3-node cluster or gateway: test/support/s3-suite.ts) driven by
 * @aws-sdk/client-s3, curl and plain unsigned HTTP. A node's other threads may use what they read
 * of a policy for ACCESS_RULES_TTL_MS, so a case waits (bounded) for a change to hold. */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import * as assert from 'uvu/assert'
import {
  CopyObjectCommand,
  CreateBucketCommand,
  DeleteBucketPolicyCommand,
  DeleteObjectsCommand,
  GetBucketAclCommand,
  GetBucketPolicyCommand,
  GetBucketPolicyStatusCommand,
  GetObjectAclCommand,
  GetObjectCommand,
  PutBucketAclCommand,
  PutBucketPolicyCommand,
  PutObjectAclCommand,
  PutObjectCommand,
} from '@aws-sdk/client-s3'
import { failure } from '../support/s3-failure.js'
import { s3, server, test, useS3Suite } from '../support/s3-suite.js'
import { pollUntil } from '../support/wait.js'

const BUCKET = 'policies'
useS3Suite(BUCKET, ['a public-read policy lets curl GET'])

const run = promisify(execFile)

function policy(...statements: object[]): string {
  return JSON.stringify({ Version: '2012-10-17', Statement: statements })
}

async function putPolicy(bucket: string, text: string): Promise<void> {
  await s3.send(new PutBucketPolicyCommand({ Bucket: bucket, Policy: text }))
}

/** An unsigned request, as a browser or curl without credentials sends it. */
async function anonymous(method: string, path: string): Promise<{ status: number; body: string }> {
  const answer = await fetch(`${server.url}${path}`, { method })
  return { status: answer.status, body: await answer.text() }
}

/** Waits until `check` holds: a policy change holds on every thread within the cache's TTL. */
async function eventually(what: string, check: () => Promise<boolean>): Promise<void> {
  assert.ok(await pollUntil(check, 10_000, 100), `${what} did not hold within 10 s`)
}

test('policy: put, get, status, delete; absent is NoSuchBucketPolicy', async () => {
  assert.equal(await failure(() => s3.send(new GetBucketPolicyCommand({ Bucket: BUCKET }))), {
    name: 'NoSuchBucketPolicy',
    status: 404,
  })
  const text = policy({
    Sid: 'ReadOnly',
    Effect: 'Allow',
    Principal: { AWS: ['arn:aws:iam:::user/nobody-here'] },
    Action: 's3:GetObject',
    Resource: `arn:aws:s3:::${BUCKET}/*`,
  })
  await putPolicy(BUCKET, text)
  const got = await s3.send(new GetBucketPolicyCommand({ Bucket: BUCKET }))
  assert.is(got.Policy, text)
  const status = await s3.send(new GetBucketPolicyStatusCommand({ Bucket: BUCKET }))
  assert.is(status.PolicyStatus?.IsPublic, false)
  await s3.send(new DeleteBucketPolicyCommand({ Bucket: BUCKET }))
  assert.equal(await failure(() => s3.send(new GetBucketPolicyCommand({ Bucket: BUCKET }))), {
    name: 'NoSuchBucketPolicy',
    status: 404,
  })
})

test('a malformed policy is MalformedPolicy with its reason, and nothing is kept', async () => {
  const cases: [string, string][] = [
    ['{"Version": "2012-10-17", "Statement": [', 'valid JSON'],
    [
      policy({
        Effect: 'Allow',
        Principal: '*',
        Action: 's3:GetObject',
        Resource: 'arn:aws:s3:::other/*',
      }),
      'invalid resource',
    ],
    [
      policy({
        Effect: 'Allow',
        Principal: '*',
        Action: 'ec2:RunInstances',
        Resource: `arn:aws:s3:::${BUCKET}/*`,
      }),
      'invalid action',
    ],
    [
      policy({
        Effect: 'Maybe',
        Principal: '*',
        Action: 's3:*',
        Resource: `arn:aws:s3:::${BUCKET}`,
      }),
      'effect',
    ],
  ]
  for (const [text, reason] of cases) {
    const refused = await s3
      .send(new PutBucketPolicyCommand({ Bucket: BUCKET, Policy: text }))
      .then(
        () => null,
        (error: Error & { $metadata?: { httpStatusCode?: number } }) => error,
      )
    assert.ok(refused !== null, `${reason}: accepted`)
    assert.is(refused.name, 'MalformedPolicy', reason)
    assert.is(refused.$metadata?.httpStatusCode, 400, reason)
    assert.match(refused.message, reason)
  }
  assert.equal(await failure(() => s3.send(new GetBucketPolicyCommand({ Bucket: BUCKET }))), {
    name: 'NoSuchBucketPolicy',
    status: 404,
  })
})

test('a public-read policy lets curl GET an object without credentials; no writes', async () => {
  const bucket = 'public-site'
  await s3.send(new CreateBucketCommand({ Bucket: bucket }))
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'index.html', Body: '<p>hello</p>' }))
  const before = await anonymous('GET', `/${bucket}/index.html`)
  assert.is(before.status, 403)
  assert.match(before.body, '<Code>AccessDenied</Code>')
  await putPolicy(
    bucket,
    policy({
      Sid: 'PublicRead',
      Effect: 'Allow',
      Principal: '*',
      Action: ['s3:GetObject'],
      Resource: [`arn:aws:s3:::${bucket}/*`],
    }),
  )
  const status = await s3.send(new GetBucketPolicyStatusCommand({ Bucket: bucket }))
  assert.is(status.PolicyStatus?.IsPublic, true)
  await eventually('the public-read policy', async () => {
    return (await anonymous('GET', `/${bucket}/index.html`)).status === 200
  })
  const curl = await run('curl', ['-s', '-f', `${server.url}/${bucket}/index.html`])
  assert.is(curl.stdout, '<p>hello</p>')
  // The policy grants reads of objects only: no listing, no writes, no deletes.
  assert.is((await anonymous('GET', `/${bucket}`)).status, 403)
  assert.is((await anonymous('PUT', `/${bucket}/new`)).status, 403)
  assert.is((await anonymous('DELETE', `/${bucket}/index.html`)).status, 403)
  // A key that does not exist is as refused as one that does, for someone who may not list.
  assert.is((await anonymous('GET', `/${bucket}/missing`)).status, 403)
  await s3.send(new DeleteBucketPolicyCommand({ Bucket: bucket }))
  await eventually('the policy removed', async () => {
    return (await anonymous('GET', `/${bucket}/index.html`)).status === 403
  })
})

test('an explicit Deny by aws:SourceIp refuses a SuperUser, who may still remove it', async () => {
  const bucket = 'denied-here'
  await s3.send(new CreateBucketCommand({ Bucket: bucket }))
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'secret', Body: 'x' }))
  await putPolicy(
    bucket,
    policy({
      Effect: 'Deny',
      Principal: '*',
      Action: 's3:*',
      Resource: [`arn:aws:s3:::${bucket}`, `arn:aws:s3:::${bucket}/*`],
      Condition: { IpAddress: { 'aws:SourceIp': ['127.0.0.0/8', '::1/128'] } },
    }),
  )
  await eventually('the Deny', async () => {
    const read = await failure(() =>
      s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'secret' })),
    )
    return read.status === 403
  })
  assert.equal(
    await failure(() => s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'more', Body: 'y' }))),
    { name: 'AccessDenied', status: 403 },
  )
  // The policy itself stays the administrators': no policy locks a bucket away for good.
  assert.ok((await s3.send(new GetBucketPolicyCommand({ Bucket: bucket }))).Policy)
  await s3.send(new DeleteBucketPolicyCommand({ Bucket: bucket }))
  await eventually('the Deny removed', async () => {
    const read = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'secret' })).then(
      async (answer) => answer.Body!.transformToString(),
      () => null,
    )
    return read === 'x'
  })
})

test('s3:prefix narrows an anonymous listing', async () => {
  const bucket = 'listed-in-part'
  await s3.send(new CreateBucketCommand({ Bucket: bucket }))
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'public/a', Body: 'a' }))
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'private/b', Body: 'b' }))
  await putPolicy(
    bucket,
    policy({
      Effect: 'Allow',
      Principal: '*',
      Action: 's3:ListBucket',
      Resource: `arn:aws:s3:::${bucket}`,
      Condition: { StringLike: { 's3:prefix': 'public/*' } },
    }),
  )
  await eventually('the listing policy', async () => {
    return (await anonymous('GET', `/${bucket}?list-type=2&prefix=public/`)).status === 200
  })
  const listed = await anonymous('GET', `/${bucket}?list-type=2&prefix=public/`)
  assert.match(listed.body, '<Key>public/a</Key>')
  assert.not.match(listed.body, 'private/b')
  assert.is((await anonymous('GET', `/${bucket}?list-type=2&prefix=private/`)).status, 403)
  assert.is((await anonymous('GET', `/${bucket}?list-type=2`)).status, 403)
})

test('DeleteObjects refuses the keys a policy denies and deletes the rest', async () => {
  const bucket = 'kept-in-part'
  await s3.send(new CreateBucketCommand({ Bucket: bucket }))
  for (const key of ['keep/1', 'drop/1']) {
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: key }))
  }
  await putPolicy(
    bucket,
    policy({
      Effect: 'Deny',
      Principal: '*',
      Action: 's3:DeleteObject',
      Resource: `arn:aws:s3:::${bucket}/keep/*`,
    }),
  )
  await eventually('the Deny of deletes', async () => {
    const answer = await s3.send(
      new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: [{ Key: 'keep/1' }] } }),
    )
    return answer.Errors?.[0]?.Code === 'AccessDenied'
  })
  const answer = await s3.send(
    new DeleteObjectsCommand({
      Bucket: bucket,
      Delete: { Objects: [{ Key: 'keep/1' }, { Key: 'drop/1' }] },
    }),
  )
  assert.equal(
    answer.Deleted?.map((entry) => entry.Key),
    ['drop/1'],
  )
  assert.equal(
    answer.Errors?.map((entry) => [entry.Key, entry.Code]),
    [['keep/1', 'AccessDenied']],
  )
  const kept = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'keep/1' }))
  assert.is(await kept.Body!.transformToString(), 'keep/1')
})

test('a copy needs the right to read its source, by the source bucket policy', async () => {
  const source = 'copy-source-denied'
  await s3.send(new CreateBucketCommand({ Bucket: source }))
  await s3.send(new PutObjectCommand({ Bucket: source, Key: 'original', Body: 'bytes' }))
  await putPolicy(
    source,
    policy({
      Effect: 'Deny',
      Principal: '*',
      Action: 's3:GetObject',
      Resource: `arn:aws:s3:::${source}/*`,
    }),
  )
  await eventually('the Deny of reads', async () => {
    const read = await failure(() =>
      s3.send(new GetObjectCommand({ Bucket: source, Key: 'original' })),
    )
    return read.status === 403
  })
  assert.equal(
    await failure(() =>
      s3.send(
        new CopyObjectCommand({ Bucket: BUCKET, Key: 'copied', CopySource: `${source}/original` }),
      ),
    ),
    { name: 'AccessDenied', status: 403 },
  )
  assert.is(
    (await failure(() => s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'copied' })))).status,
    404,
  )
})

test('canned ACLs: anyone lists a public-read bucket and reads a public-read object', async () => {
  const bucket = 'acl-public'
  await s3.send(new CreateBucketCommand({ Bucket: bucket, ACL: 'public-read' }))
  const acl = await s3.send(new GetBucketAclCommand({ Bucket: bucket }))
  const groups = (acl.Grants ?? []).map((grant) => [grant.Grantee?.URI, grant.Permission])
  assert.ok(
    groups.some(
      ([uri, permission]) =>
        uri === 'http://acs.amazonaws.com/groups/global/AllUsers' && permission === 'READ',
    ),
    JSON.stringify(groups),
  )
  await s3.send(
    new PutObjectCommand({ Bucket: bucket, Key: 'shared', Body: 's', ACL: 'public-read' }),
  )
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'own', Body: 'o' }))
  await eventually('the public-read bucket ACL', async () => {
    return (await anonymous('GET', `/${bucket}?list-type=2`)).status === 200
  })
  assert.match((await anonymous('GET', `/${bucket}?list-type=2`)).body, '<Key>shared</Key>')
  const shared = await anonymous('GET', `/${bucket}/shared`)
  assert.equal(shared, { status: 200, body: 's' })
  // The bucket's ACL lets anyone list it, not read its objects: that is each object's ACL.
  assert.is((await anonymous('GET', `/${bucket}/own`)).status, 403)
  const objectAcl = await s3.send(new GetObjectAclCommand({ Bucket: bucket, Key: 'shared' }))
  assert.ok(
    (objectAcl.Grants ?? []).some((grant) => grant.Grantee?.URI?.endsWith('/AllUsers') === true),
  )
  await s3.send(new PutObjectAclCommand({ Bucket: bucket, Key: 'shared', ACL: 'private' }))
  assert.is((await anonymous('GET', `/${bucket}/shared`)).status, 403)
  const now = await s3.send(new GetObjectAclCommand({ Bucket: bucket, Key: 'shared' }))
  assert.equal(
    (now.Grants ?? []).map((grant) => grant.Permission),
    ['FULL_CONTROL'],
  )
  await s3.send(new PutBucketAclCommand({ Bucket: bucket, ACL: 'private' }))
  await eventually('the private bucket ACL', async () => {
    return (await anonymous('GET', `/${bucket}?list-type=2`)).status === 403
  })
})

test.run()
