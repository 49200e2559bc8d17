/** Goal: identities made through the admin API govern the S3 API at once. Roles give exactly their
 * permissions (Reader reads, Writer writes, SuperUser everything); deactivating, demoting or
 * deleting a user, or replacing or deleting its keys, takes effect on the very next request (no
 * sleeps: the ingress's key cache is told before the admin call returns); tokens follow their
 * user's current state; secrets are sealed on disk; logins are throttled and indistinguishable for
 * unknown users; users, keys and the root password survive a restart. Method: a real server driven
 * by fetch for the admin API and @aws-sdk/client-s3 with each user's keys. */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import {
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListBucketsCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutBucketPolicyCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3'
import { startServer, type TestServer } from '../support/server.js'
import { sleep } from '../support/wait.js'
import { admin, createUser, issueKeys, login, type Credentials } from '../support/admin-client.js'

const ROOT_PASSWORD = 'root-password-for-tests'
/** argon2id with 19 MiB and 2 passes takes tens of ms; an answer faster than this skipped it. */
const ARGON2_MS_MIN = 5

function clientOf(server: TestServer, keys: Credentials): S3Client {
  return server.client({ accessKeyId: keys.access_key, secretAccessKey: keys.secret_key })
}

/** The S3 error code of a failed call, or 'ok'. */
async function outcome(run: () => Promise<unknown>): Promise<string> {
  try {
    await run()
    return 'ok'
  } catch (error) {
    return (error as { name?: string }).name ?? String(error)
  }
}

/** One call of each S3 operation class, in an order that leaves the bucket as it found it. */
function operations(s3: S3Client, bucket: string, tag: string): [string, () => Promise<unknown>][] {
  const key = `${tag}-object`
  return [
    ['ListBuckets', () => s3.send(new ListBucketsCommand({}))],
    ['ListObjectsV2', () => s3.send(new ListObjectsV2Command({ Bucket: bucket }))],
    ['GetObject', () => s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'seed' }))],
    ['HeadObject', () => s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'seed' }))],
    ['PutObject', () => s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'x' }))],
    [
      'CopyObject',
      () =>
        s3.send(
          new CopyObjectCommand({
            Bucket: bucket,
            Key: `${key}-copy`,
            CopySource: `${bucket}/seed`,
          }),
        ),
    ],
    ['DeleteObject', () => s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }))],
    [
      'DeleteObjects',
      () =>
        s3.send(
          new DeleteObjectsCommand({
            Bucket: bucket,
            Delete: { Objects: [{ Key: `${key}-copy` }] },
          }),
        ),
    ],
    ['ListMultipartUploads', () => s3.send(new ListMultipartUploadsCommand({ Bucket: bucket }))],
    [
      'CreateMultipartUpload',
      () => s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: `${key}-multi` })),
    ],
    ['CreateBucket', () => s3.send(new CreateBucketCommand({ Bucket: `${tag}-bucket` }))],
    ['DeleteBucket', () => s3.send(new DeleteBucketCommand({ Bucket: `${tag}-bucket` }))],
  ]
}

const READS = new Set([
  'ListBuckets',
  'ListObjectsV2',
  'GetObject',
  'HeadObject',
  'ListMultipartUploads',
])

test('the role matrix: Reader reads, Writer and SuperUser do everything', async () => {
  const server = await startServer({ env: { SVC_ROOT_PASSWORD: ROOT_PASSWORD } })
  try {
    const token = await login(server, 'root', ROOT_PASSWORD)
    await server.client().send(new CreateBucketCommand({ Bucket: 'matrix' }))
    await server.client().send(new PutObjectCommand({ Bucket: 'matrix', Key: 'seed', Body: 's' }))
    for (const role of ['Reader', 'Writer', 'SuperUser']) {
      const userId = await createUser(server, token, `user_${role.toLowerCase()}`, role)
      const s3 = clientOf(server, await issueKeys(server, token, userId))
      for (const [name, run] of operations(s3, 'matrix', role.toLowerCase())) {
        const expected = role === 'Reader' && !READS.has(name) ? 'AccessDenied' : 'ok'
        assert.is(await outcome(run), expected, `${role} ${name}`)
      }
    }
  } finally {
    await server.stop()
    server.cleanup()
  }
})

test('a policy grants a Reader uploads under a prefix; a Writer may not set one', async () => {
  const server = await startServer({ env: { SVC_ROOT_PASSWORD: ROOT_PASSWORD } })
  try {
    const token = await login(server, 'root', ROOT_PASSWORD)
    const root = server.client()
    await root.send(new CreateBucketCommand({ Bucket: 'drops' }))
    const reader = clientOf(
      server,
      await issueKeys(server, token, await createUser(server, token, 'rita', 'Reader')),
    )
    const writer = clientOf(
      server,
      await issueKeys(server, token, await createUser(server, token, 'wes', 'Writer')),
    )
    const text = JSON.stringify({
      Version: '2012-10-17',
      Statement: [
        {
          Effect: 'Allow',
          Principal: { AWS: ['arn:aws:iam:::user/rita'] },
          Action: 's3:PutObject',
          Resource: 'arn:aws:s3:::drops/inbox/*',
        },
      ],
    })
    const put = (s3: S3Client, key: string) => () =>
      s3.send(new PutObjectCommand({ Bucket: 'drops', Key: key, Body: 'x' }))
    assert.is(await outcome(put(reader, 'inbox/a')), 'AccessDenied')
    const setPolicy = (s3: S3Client) => () =>
      s3.send(new PutBucketPolicyCommand({ Bucket: 'drops', Policy: text }))
    assert.is(await outcome(setPolicy(writer)), 'AccessDenied')
    const publicBucket = () =>
      writer.send(new CreateBucketCommand({ Bucket: 'wes-public', ACL: 'public-read' }))
    assert.is(await outcome(publicBucket), 'AccessDenied')
    assert.is(await outcome(setPolicy(root)), 'ok')
    // The server runs one ingress thread here: the policy's put dropped what it had read.
    assert.is(await outcome(put(reader, 'inbox/a')), 'ok')
    assert.is(await outcome(put(reader, 'elsewhere')), 'AccessDenied')
    assert.is(
      await outcome(() =>
        reader.send(new DeleteObjectCommand({ Bucket: 'drops', Key: 'inbox/a' })),
      ),
      'AccessDenied',
    )
  } finally {
    await server.stop()
    server.cleanup()
  }
})

test('only a SuperUser, or whom a policy grants it, bypasses governance retention', async () => {
  const server = await startServer({ env: { SVC_ROOT_PASSWORD: ROOT_PASSWORD } })
  try {
    const token = await login(server, 'root', ROOT_PASSWORD)
    const root = server.client()
    await root.send(
      new CreateBucketCommand({ Bucket: 'governed', ObjectLockEnabledForBucket: true }),
    )
    const writerId = await createUser(server, token, 'gina', 'Writer')
    const writer = clientOf(server, await issueKeys(server, token, writerId))
    const until = new Date(Date.now() + 24 * 60 * 60 * 1000)
    const put = await writer.send(
      new PutObjectCommand({
        Bucket: 'governed',
        Key: 'report',
        Body: 'r',
        ObjectLockMode: 'GOVERNANCE',
        ObjectLockRetainUntilDate: until,
      }),
    )
    const bypassing = (s3: S3Client) => () =>
      s3.send(
        new DeleteObjectCommand({
          Bucket: 'governed',
          Key: 'report',
          VersionId: put.VersionId,
          BypassGovernanceRetention: true,
        }),
      )
    assert.is(await outcome(bypassing(writer)), 'AccessDenied')
    const policy = JSON.stringify({
      Version: '2012-10-17',
      Statement: [
        {
          Effect: 'Allow',
          Principal: { AWS: 'gina' },
          Action: 's3:BypassGovernanceRetention',
          Resource: 'arn:aws:s3:::governed/*',
        },
      ],
    })
    await root.send(new PutBucketPolicyCommand({ Bucket: 'governed', Policy: policy }))
    // One ingress thread: the policy's put dropped what it had read of the bucket's rules.
    assert.is(await outcome(bypassing(writer)), 'ok')
  } finally {
    await server.stop()
    server.cleanup()
  }
})

test('deactivation, demotion, key replacement and deletion apply on the next request', async () => {
  const server = await startServer({ env: { SVC_ROOT_PASSWORD: ROOT_PASSWORD } })
  try {
    const token = await login(server, 'root', ROOT_PASSWORD)
    await server.client().send(new CreateBucketCommand({ Bucket: 'switches' }))
    const userId = await createUser(server, token, 'switched', 'Writer')
    const first = await issueKeys(server, token, userId)
    const s3 = clientOf(server, first)
    const put = (key: string): Promise<string> =>
      outcome(() => s3.send(new PutObjectCommand({ Bucket: 'switches', Key: key, Body: 'b' })))
    // Warm the ingress's key cache, so a stale entry would show.
    assert.is(await put('a'), 'ok')
    const off = await admin(server, 'PUT', `/users/${userId}`, token, { is_active: false })
    assert.is(off.status, 200, off.text)
    assert.is((off.json as { is_active: boolean }).is_active, false)
    assert.is(await put('b'), 'AccessDenied')
    assert.is(await outcome(() => s3.send(new ListBucketsCommand({}))), 'AccessDenied')
    assert.is(
      (await admin(server, 'PUT', `/users/${userId}`, token, { is_active: true })).status,
      200,
    )
    assert.is(await put('c'), 'ok')
    assert.is(
      (await admin(server, 'PUT', `/users/${userId}`, token, { role: 'Reader' })).status,
      200,
    )
    assert.is(await put('d'), 'AccessDenied')
    const listed = await outcome(() => s3.send(new ListObjectsV2Command({ Bucket: 'switches' })))
    assert.is(listed, 'ok')
    assert.is(
      (await admin(server, 'PUT', `/users/${userId}`, token, { role: 'Writer' })).status,
      200,
    )
    assert.is(await put('e'), 'ok')

    const second = await issueKeys(server, token, userId)
    assert.is.not(second.access_key, first.access_key)
    assert.is(await put('f'), 'InvalidAccessKeyId')
    const renewed = clientOf(server, second)
    const putRenewed = (key: string): Promise<string> =>
      outcome(() => renewed.send(new PutObjectCommand({ Bucket: 'switches', Key: key, Body: 'b' })))
    assert.is(await putRenewed('g'), 'ok')
    assert.is((await admin(server, 'DELETE', `/users/${userId}/credentials`, token)).status, 204)
    assert.is(await putRenewed('h'), 'InvalidAccessKeyId')
    const again = await admin(server, 'DELETE', `/users/${userId}/credentials`, token)
    assert.is(again.status, 404)
    assert.is((again.json as { code: string }).code, 'NoS3Credentials')

    const third = clientOf(server, await issueKeys(server, token, userId))
    const put3 = (): Promise<string> =>
      outcome(() => third.send(new PutObjectCommand({ Bucket: 'switches', Key: 'i', Body: 'b' })))
    assert.is(await put3(), 'ok')
    assert.is((await admin(server, 'DELETE', `/users/${userId}`, token)).status, 204)
    assert.is(await put3(), 'InvalidAccessKeyId')
  } finally {
    await server.stop()
    server.cleanup()
  }
})

test('a token follows its user: demoted → 403, deactivated or deleted → 401', async () => {
  const server = await startServer({ env: { SVC_ROOT_PASSWORD: ROOT_PASSWORD } })
  try {
    const root = await login(server, 'root', ROOT_PASSWORD)
    const userId = await createUser(server, root, 'second_admin', 'SuperUser')
    const token = await login(server, 'second_admin', 'second_admin-password')
    assert.is((await admin(server, 'GET', '/users', token)).status, 200)
    await admin(server, 'PUT', `/users/${userId}`, root, { role: 'Writer' })
    const demoted = await admin(server, 'GET', '/users', token)
    assert.is(demoted.status, 403)
    assert.is((demoted.json as { code: string }).code, 'Forbidden')
    await admin(server, 'PUT', `/users/${userId}`, root, { role: 'SuperUser' })
    assert.is((await admin(server, 'GET', '/users', token)).status, 200)
    await admin(server, 'PUT', `/users/${userId}`, root, { is_active: false })
    const inactive = await admin(server, 'GET', '/users', token)
    assert.is(inactive.status, 401)
    assert.is((inactive.json as { code: string }).code, 'Unauthorized')
    const refused = await admin(server, 'POST', '/login', undefined, {
      username: 'second_admin',
      password: 'second_admin-password',
    })
    assert.is(refused.status, 401)
    assert.is((refused.json as { code: string }).code, 'InvalidCredentials')
    await admin(server, 'PUT', `/users/${userId}`, root, { is_active: true })
    assert.is((await admin(server, 'GET', '/users', token)).status, 200)
    assert.is((await admin(server, 'DELETE', `/users/${userId}`, root)).status, 204)
    assert.is((await admin(server, 'GET', '/users', token)).status, 401)
  } finally {
    await server.stop()
    server.cleanup()
  }
})

test('a token expires at its expires_at', async () => {
  const server = await startServer({
    env: { SVC_ROOT_PASSWORD: ROOT_PASSWORD, SVC_JWT_TTL_SECS: '2' },
  })
  try {
    const answer = await admin(server, 'POST', '/login', undefined, {
      username: 'root',
      password: ROOT_PASSWORD,
    })
    const { token, expires_at } = answer.json as { token: string; expires_at: string }
    const expiresMs = Date.parse(expires_at)
    const claims = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()) as {
      exp: number
      iat: number
      sub: string
      role: string
      jti: string
    }
    assert.is(claims.exp * 1000, expiresMs)
    assert.is(claims.exp - claims.iat, 2)
    assert.is(claims.role, 'SuperUser')
    assert.ok(claims.jti.length >= 16 && claims.sub.length > 0)
    assert.is((await admin(server, 'GET', '/users', token)).status, 200)
    // Poll past expiry (bounded): the token must stop working, and not before expires_at.
    let status = 200
    for (let attempt = 0; attempt < 40 && status === 200; attempt += 1) {
      await sleep(100)
      // The server checks on receipt, after this moment: a 200 proves it was valid no earlier.
      const sentMs = Date.now()
      status = (await admin(server, 'GET', '/users', token)).status
      if (status === 200) assert.ok(sentMs < expiresMs + 1000, 'still valid after expiry')
    }
    assert.is(status, 401)
    assert.ok(Date.now() >= expiresMs - 1000, 'expired before expires_at')
  } finally {
    await server.stop()
    server.cleanup()
  }
})

test('login failures: identical for unknown users and wrong passwords, throttled', async () => {
  const server = await startServer({ env: { SVC_ROOT_PASSWORD: ROOT_PASSWORD } })
  try {
    const token = await login(server, 'root', ROOT_PASSWORD)
    await createUser(server, token, 'known_user', 'Reader')
    const attempt = async (username: string, password: string) => {
      const started = performance.now()
      const answer = await admin(server, 'POST', '/login', undefined, { username, password })
      return { ...answer, ms: performance.now() - started }
    }
    const unknown = await attempt('nobody_here', 'whatever')
    const wrong = await attempt('known_user', 'not-the-password')
    assert.is(unknown.status, 401)
    assert.is(unknown.text, wrong.text)
    assert.is((unknown.json as { code: string }).code, 'InvalidCredentials')
    const comparable = (headers: Headers): string[] =>
      [...headers.entries()]
        .filter(([name]) => !['date', 'x-request-id', 'x-amz-request-id'].includes(name))
        .map(([name, value]) => `${name}: ${value}`)
    assert.equal(comparable(unknown.headers), comparable(wrong.headers))
    // Both checks run argon2id (19 MiB, 2 passes: well over 5 ms on any machine); an unknown user
    // that skipped it would answer in well under a millisecond of server time. A busy machine only
    // makes either slower, so lower bounds hold however loaded it is, where a ratio would not.
    const median = (values: number[]): number => values.sort((a, b) => a - b)[2] ?? 0
    const unknownMs: number[] = []
    const wrongMs: number[] = []
    for (let round = 0; round < 5; round += 1) {
      unknownMs.push((await attempt(`ghost_${round}`, 'whatever')).ms)
      wrongMs.push((await attempt('known_user', `wrong-${round}`)).ms)
    }
    for (const [label, ms] of [
      ['unknown user', median(unknownMs)],
      ['wrong password', median(wrongMs)],
    ] as const) {
      assert.ok(ms >= ARGON2_MS_MIN, `${label}: login answered in ${ms.toFixed(1)} ms`)
    }

    // known_user now has 6 failures: past the per-username limit, even with the right password.
    const throttled = await attempt('known_user', 'known_user-password')
    assert.is(throttled.status, 429, throttled.text)
    assert.is((throttled.json as { code: string }).code, 'TooManyRequests')
    const retryAfter = Number(throttled.headers.get('retry-after'))
    assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 300)
    // Other users are not locked out by someone else's failures.
    assert.is((await attempt('root', ROOT_PASSWORD)).status, 200)
    // Per address: 20 failures from this address, spread over usernames, lock out new names too.
    for (let round = 0; round < 10; round += 1) await attempt(`spray_${round}`, 'x')
    const sprayed = await attempt('root', ROOT_PASSWORD)
    assert.is(sprayed.status, 429, sprayed.text)
  } finally {
    await server.stop()
    server.cleanup()
  }
})

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    return entry.isDirectory() ? filesUnder(path) : [path]
  })
}

test('secrets are sealed on disk, key files are 0600, state survives a restart', async () => {
  let server = await startServer({ env: { SVC_ROOT_PASSWORD: ROOT_PASSWORD } })
  const dataDir = server.dataDir
  try {
    const token = await login(server, 'root', ROOT_PASSWORD)
    const userId = await createUser(server, token, 'durable', 'Writer')
    const keys = await issueKeys(server, token, userId)
    assert.match(keys.access_key, /^SVCAK[A-Za-z0-9]{20}$/)
    assert.match(keys.secret_key, /^[A-Za-z0-9+/]{40}$/)
    await clientOf(server, keys).send(new CreateBucketCommand({ Bucket: 'durable' }))
    assert.is(await server.stop(), 0)
    for (const name of ['master.key', 'jwt.secret']) {
      assert.is(statSync(join(dataDir, name)).mode & 0o777, 0o600, name)
    }
    for (const file of filesUnder(dataDir)) {
      const bytes = readFileSync(file)
      assert.is(bytes.indexOf(keys.secret_key), -1, `secret key in ${file}`)
      assert.is(bytes.indexOf(ROOT_PASSWORD), -1, `root password in ${file}`)
      assert.is(bytes.indexOf('durable-password'), -1, `user password in ${file}`)
    }
    // A later start keeps the stored root user: a different SVC_ROOT_PASSWORD changes nothing.
    server = await startServer({ dataDir, env: { SVC_ROOT_PASSWORD: 'another-password' } })
    const again = await login(server, 'root', ROOT_PASSWORD)
    const users = (await admin(server, 'GET', '/users', again)).json as { username: string }[]
    assert.equal(users.map((user) => user.username).sort(), ['durable', 'root'])
    const refused = await admin(server, 'POST', '/login', undefined, {
      username: 'root',
      password: 'another-password',
    })
    assert.is(refused.status, 401)
    const listed = await clientOf(server, keys).send(new ListBucketsCommand({}))
    assert.equal(
      listed.Buckets?.map((bucket) => bucket.Name),
      ['durable'],
    )
  } finally {
    await server.stop()
    server.cleanup()
  }
})

test.run()
