/** @module Goal: the admin API answers every row of SPEC.md's Admin API table and its rules, with
 * every admin error code reachable from HTTP: login (identical failures, throttling, a node without
 * SVC_ROOT_PASSWORD), bearer tokens and roles, user CRUD, S3 credentials, buckets, paginated object
 * listings, bucket stats, bounded bodies, unknown paths and methods, 503 while iam restarts. Every
 * answer carries x-request-id, every failure is exactly `{error, code}`, requests are counted in
 * /metrics and logged without secrets. Method: a real server (child process on 127.0.0.1) driven
 * with fetch; objects are uploaded with @aws-sdk/client-s3 and the bootstrap keys. */
import { createHash } from 'node:crypto'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  ListBucketsCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3'
import { signedRequest } from '../support/signed-request.js'
import { startServer, type TestServer } from '../support/server.js'
import { sleep } from '../support/wait.js'

const ROOT_PASSWORD = 'admin-api-root-password'
const TTL_SECS = 900
const PAGED_OBJECTS = 2500
const UPLOAD_CONCURRENCY = 32
const POLL_MS_MAX = 10_000
const UNKNOWN_ID = '0f8fad5b-d9cb-469f-a165-70867728950e'

let server: TestServer
let s3: S3Client
let root: string
const startedMs = Date.now()
/** Every secret the suite handles: none may appear in the server's log. */
const secrets = new Set<string>([ROOT_PASSWORD])

interface Answer {
  status: number
  text: string
  json: unknown
  headers: Headers
}

interface CallOptions {
  token?: string
  body?: unknown
  rawBody?: BodyInit
  headers?: Record<string, string>
  url?: string
}

const requestIds = new Set<string>()

/** One admin request; checks what every admin answer must be (request id, JSON failures). */
async function call(method: string, path: string, options: CallOptions = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers }
  if (options.token !== undefined) headers['authorization'] = `Bearer ${options.token}`
  const json = options.body === undefined ? undefined : JSON.stringify(options.body)
  const body = options.rawBody ?? json
  const response = await fetch(`${options.url ?? server.url}/api/admin${path}`, {
    method,
    headers,
    signal: AbortSignal.timeout(60_000),
    ...(body === undefined ? {} : { body, duplex: 'half' as const }),
  })
  const text = await response.text()
  const requestId = response.headers.get('x-request-id') ?? ''
  assert.match(requestId, /^[0-9A-F]{18}$/, `${method} ${path}: request id`)
  assert.not.ok(requestIds.has(requestId), 'request ids are unique')
  requestIds.add(requestId)
  const parsed = text === '' ? null : (JSON.parse(text) as unknown)
  if (response.status >= 400) {
    assert.match(response.headers.get('content-type') ?? '', /^application\/json/)
    const failure = parsed as Record<string, unknown>
    assert.equal(Object.keys(failure).sort(), ['code', 'error'], text)
    assert.type(failure['error'], 'string')
    assert.type(failure['code'], 'string')
  }
  return { status: response.status, text, json: parsed, headers: response.headers }
}

function expectFailure(answer: Answer, status: number, code: string, label = ''): void {
  assert.is(answer.status, status, `${label} ${answer.text}`)
  assert.is((answer.json as { code: string }).code, code, label)
}

function expectOk(answer: Answer, status: number, label = ''): void {
  assert.is(answer.status, status, `${label} ${answer.text}`)
}

async function login(username: string, password: string): Promise<string> {
  const answer = await call('POST', '/login', { body: { username, password } })
  expectOk(answer, 200, `login ${username}`)
  return (answer.json as { token: string }).token
}

interface UserJson {
  id: string
  username: string
  role: string
  is_active: boolean
  created_at: string
  access_key: string | null
}

async function createUser(username: string, role: string): Promise<UserJson> {
  const password = `${username}-password`
  secrets.add(password)
  const answer = await call('POST', '/users', { token: root, body: { username, password, role } })
  expectOk(answer, 201, `create ${username}`)
  return answer.json as UserJson
}

const ISO_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

function assertRecent(iso: string, label: string): void {
  assert.match(iso, ISO_UTC, label)
  const ms = Date.parse(iso)
  assert.ok(ms >= startedMs - 2_000 && ms <= Date.now() + 2_000, `${label}: ${iso}`)
}

test.before(async () => {
  server = await startServer({
    env: {
      SVC_ROOT_PASSWORD: ROOT_PASSWORD,
      SVC_JWT_TTL_SECS: String(TTL_SECS),
      SVC_LOG_LEVEL: 'info',
      SVC_CHAOS: '1',
    },
  })
  s3 = server.client()
})

test.after(async () => {
  s3.destroy()
  await server.stop()
  server.cleanup()
})

test('login: 200 with a token and expires_at now + SVC_JWT_TTL_SECS', async () => {
  const before = Date.now()
  const answer = await call('POST', '/login', {
    body: { username: 'root', password: ROOT_PASSWORD },
  })
  expectOk(answer, 200)
  assert.match(answer.headers.get('content-type') ?? '', /^application\/json/)
  const grant = answer.json as { token: string; expires_at: string }
  assert.equal(Object.keys(grant).sort(), ['expires_at', 'token'])
  assert.is(grant.token.split('.').length, 3)
  assert.match(grant.expires_at, ISO_UTC)
  const expiresMs = Date.parse(grant.expires_at)
  assert.ok(expiresMs >= before + TTL_SECS * 1000 - 2_000, grant.expires_at)
  assert.ok(expiresMs <= Date.now() + TTL_SECS * 1000 + 2_000, grant.expires_at)
  root = grant.token
  expectOk(await call('GET', '/users', { token: root }), 200)
})

test('login failures: unknown user and wrong password answer byte-identically', async () => {
  await createUser('known_user', 'Reader')
  const attempt = (username: string, password: string): Promise<Answer> =>
    call('POST', '/login', { body: { username, password } })
  const unknown = await attempt('nobody_here', 'some-password')
  const wrong = await attempt('known_user', 'not-the-password')
  // Names no account can have fail the same way, without costing iam a hash.
  const impossible = await attempt('no-such-name', 'some-password')
  for (const answer of [unknown, wrong, impossible]) {
    expectFailure(answer, 401, 'InvalidCredentials')
  }
  assert.is(unknown.text, wrong.text)
  assert.is(impossible.text, wrong.text)
  assert.not.match(unknown.text, 'nobody_here')
  const comparable = (headers: Headers): string[] =>
    [...headers.entries()]
      .filter(([name]) => name !== 'date' && name !== 'x-request-id')
      .map(([name, value]) => `${name}: ${value}`)
  assert.equal(comparable(unknown.headers), comparable(wrong.headers))
  assert.equal(comparable(impossible.headers), comparable(wrong.headers))
})

test('login: bad bodies are 400 InvalidData', async () => {
  const bodies: [string, string][] = [
    ['not JSON', 'username=root&password=x'],
    ['array', '[]'],
    ['missing password', '{"username":"root"}'],
    ['number', '{"username":"root","password":5}'],
    ['unknown field', `{"username":"root","password":"${ROOT_PASSWORD}","otp":1}`],
  ]
  for (const [label, rawBody] of bodies) {
    expectFailure(await call('POST', '/login', { rawBody }), 400, 'InvalidData', label)
  }
})

test('login throttling: repeated failures for a username answer 429 with Retry-After', async () => {
  await createUser('locked_out', 'Reader')
  for (let attempt = 0; attempt < 5; attempt += 1) {
    const failed = await call('POST', '/login', {
      body: { username: 'locked_out', password: `wrong-${attempt}` },
    })
    expectFailure(failed, 401, 'InvalidCredentials', `attempt ${attempt}`)
  }
  const throttled = await call('POST', '/login', {
    body: { username: 'locked_out', password: 'locked_out-password' },
  })
  expectFailure(throttled, 429, 'TooManyRequests')
  const retryAfter = Number(throttled.headers.get('retry-after'))
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 300, `${retryAfter}`)
  // Someone else's failures do not lock another username out.
  await login('known_user', 'known_user-password')
})

/** Every route but login, with a path that exists once the suite has created it. */
function protectedRoutes(userId: string): [string, string][] {
  return [
    ['GET', '/users'],
    ['POST', '/users'],
    ['GET', `/users/${userId}`],
    ['PUT', `/users/${userId}`],
    ['DELETE', `/users/${userId}`],
    ['POST', `/users/${userId}/credentials`],
    ['DELETE', `/users/${userId}/credentials`],
    ['PUT', '/buckets/never-made'],
    ['DELETE', '/buckets/never-made'],
    ['GET', '/buckets/never-made/objects'],
    ['GET', '/bucket-stats'],
  ]
}

test('every route but login needs a valid bearer token: else 401 Unauthorized', async () => {
  const user = await createUser('token_target', 'Writer')
  const [head, payload] = root.split('.')
  const forged = `${head}.${payload}.${'A'.repeat(43)}`
  const headers: (Record<string, string> | undefined)[] = [
    undefined,
    { authorization: '' },
    { authorization: `Basic ${Buffer.from('root:x').toString('base64')}` },
    { authorization: 'Bearer' },
    { authorization: `Bearer ${root} extra` },
    { authorization: 'Bearer not-a-jwt' },
    { authorization: `Bearer ${forged}` },
  ]
  for (const [method, path] of protectedRoutes(user.id)) {
    for (const header of headers) {
      const answer = await call(method, path, header === undefined ? {} : { headers: header })
      expectFailure(answer, 401, 'Unauthorized', `${method} ${path} ${JSON.stringify(header)}`)
    }
  }
  // Nothing was done on the way: the user still exists and has no keys.
  const still = await call('GET', `/users/${user.id}`, { token: root })
  assert.is((still.json as UserJson).access_key, null)
})

test('Reader and Writer tokens get 403 Forbidden on every route', async () => {
  const target = await createUser('forbidden_target', 'Reader')
  for (const role of ['Reader', 'Writer']) {
    const username = `role_${role.toLowerCase()}`
    await createUser(username, role)
    const token = await login(username, `${username}-password`)
    for (const [method, path] of protectedRoutes(target.id)) {
      const answer = await call(method, path, { token })
      expectFailure(answer, 403, 'Forbidden', `${role} ${method} ${path}`)
    }
  }
  expectOk(await call('GET', `/users/${target.id}`, { token: root }), 200)
})

test('users: create 201, list, get, and the JSON shape', async () => {
  const created = await createUser('crud_user', 'Writer')
  assert.equal(Object.keys(created).sort(), [
    'access_key',
    'created_at',
    'id',
    'is_active',
    'role',
    'username',
  ])
  assert.match(created.id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
  const blanked = { ...created, id: '', created_at: '' }
  assert.equal(blanked, {
    id: '',
    username: 'crud_user',
    role: 'Writer',
    is_active: true,
    created_at: '',
    access_key: null,
  })
  assertRecent(created.created_at, 'created_at')
  const listed = await call('GET', '/users', { token: root })
  expectOk(listed, 200)
  const users = listed.json as UserJson[]
  assert.ok(Array.isArray(users))
  assert.equal(
    users.find((u) => u.id === created.id),
    created,
  )
  assert.ok(users.some((u) => u.username === 'root' && u.role === 'SuperUser' && u.is_active))
  const fetched = await call('GET', `/users/${created.id}`, { token: root })
  expectOk(fetched, 200)
  assert.equal(fetched.json, created)
})

test('users: update 200 with the updated user, delete 204, then 404', async () => {
  const created = await createUser('update_user', 'Writer')
  const path = `/users/${created.id}`
  const demoted = await call('PUT', path, { token: root, body: { role: 'Reader' } })
  expectOk(demoted, 200)
  assert.equal(demoted.json, { ...created, role: 'Reader' })
  const off = await call('PUT', path, { token: root, body: { is_active: false, role: 'Writer' } })
  assert.equal(off.json, { ...created, is_active: false })
  const on = await call('PUT', path, { token: root, body: { is_active: true } })
  assert.equal(on.json, created)
  secrets.add('update-new-password')
  const changed = await call('PUT', path, {
    token: root,
    body: { password: 'update-new-password' },
  })
  expectOk(changed, 200)
  await login('update_user', 'update-new-password')

  const deleted = await call('DELETE', path, { token: root })
  assert.is(deleted.status, 204)
  assert.is(deleted.text, '')
  expectFailure(await call('GET', path, { token: root }), 404, 'UserNotFound')
  expectFailure(await call('DELETE', path, { token: root }), 404, 'UserNotFound')
})

test('users: duplicate 409, bad username 400, bad role and fields 400', async () => {
  const body = { username: 'dup_user', password: 'dup-password', role: 'Reader' }
  expectOk(await call('POST', '/users', { token: root, body }), 201)
  expectFailure(await call('POST', '/users', { token: root, body }), 409, 'UserAlreadyExists')
  for (const username of ['ab', 'x'.repeat(33), 'dash-name', 'ünïcode']) {
    const answer = await call('POST', '/users', { token: root, body: { ...body, username } })
    expectFailure(answer, 400, 'InvalidUsername', username)
  }
  const bad: [string, unknown][] = [
    ['bad role', { ...body, username: 'fresh_one', role: 'Admin' }],
    ['empty password', { ...body, username: 'fresh_one', password: '' }],
    ['role a number', { ...body, username: 'fresh_one', role: 3 }],
    ['unknown field', { ...body, username: 'fresh_one', is_active: true }],
    ['array', [body]],
  ]
  for (const [label, value] of bad) {
    const answer = await call('POST', '/users', { token: root, body: value })
    expectFailure(answer, 400, 'InvalidData', label)
  }
  const user = await createUser('change_target', 'Reader')
  const changes: [string, unknown][] = [
    ['nothing', {}],
    ['unknown field', { username: 'renamed' }],
    ['is_active a string', { is_active: 'false' }],
    ['bad role', { role: 'Root' }],
  ]
  for (const [label, value] of changes) {
    const answer = await call('PUT', `/users/${user.id}`, { token: root, body: value })
    expectFailure(answer, 400, 'InvalidData', label)
  }
})

test('users: unknown and malformed ids answer 404 UserNotFound on every user route', async () => {
  const routes: [string, string, unknown][] = [
    ['GET', '', undefined],
    ['PUT', '', { role: 'Reader' }],
    ['DELETE', '', undefined],
    ['POST', '/credentials', undefined],
    ['DELETE', '/credentials', undefined],
  ]
  for (const id of [UNKNOWN_ID, 'not-an-id', 'ROOT']) {
    for (const [method, suffix, body] of routes) {
      const answer = await call(method, `/users/${id}${suffix}`, { token: root, body })
      expectFailure(answer, 404, 'UserNotFound', `${method} ${id}${suffix}`)
    }
  }
})

test('credentials: 201 with SVCAK keys that work on S3, delete 204, again 404', async () => {
  const user = await createUser('keyed_user', 'Writer')
  const issued = await call('POST', `/users/${user.id}/credentials`, { token: root })
  expectOk(issued, 201)
  const keys = issued.json as { access_key: string; secret_key: string }
  assert.equal(Object.keys(keys).sort(), ['access_key', 'secret_key'])
  assert.match(keys.access_key, /^SVCAK[A-Za-z0-9]{20}$/)
  assert.match(keys.secret_key, /^[A-Za-z0-9]{40}$/)
  secrets.add(keys.secret_key)
  const shown = await call('GET', `/users/${user.id}`, { token: root })
  assert.is((shown.json as UserJson).access_key, keys.access_key)
  assert.not.match(shown.text, keys.secret_key)
  const listed = await call('GET', '/users', { token: root })
  assert.not.match(listed.text, keys.secret_key)
  const client = server.client({ accessKeyId: keys.access_key, secretAccessKey: keys.secret_key })
  try {
    await client.send(new ListBucketsCommand({}))
  } finally {
    client.destroy()
  }
  const deleted = await call('DELETE', `/users/${user.id}/credentials`, { token: root })
  assert.is(deleted.status, 204)
  assert.is(deleted.text, '')
  const again = await call('DELETE', `/users/${user.id}/credentials`, { token: root })
  expectFailure(again, 404, 'NoS3Credentials')
  const cleared = await call('GET', `/users/${user.id}`, { token: root })
  assert.is((cleared.json as UserJson).access_key, null)
})

test('buckets: create 201 {name}, duplicate 409, invalid names 400', async () => {
  const created = await call('PUT', '/buckets/admin-made', { token: root })
  expectOk(created, 201)
  assert.equal(created.json, { name: 'admin-made' })
  await s3.send(new HeadBucketCommand({ Bucket: 'admin-made' }))
  const again = await call('PUT', '/buckets/admin-made', { token: root })
  expectFailure(again, 409, 'BucketAlreadyExists')
  const invalid = ['ab', 'x'.repeat(64), 'Upper', 'under_score', '-lead', 'trail-', '192.168.1.1']
  for (const name of [...invalid, 'a..b', 'a.-b']) {
    const answer = await call('PUT', `/buckets/${encodeURIComponent(name)}`, { token: root })
    expectFailure(answer, 400, 'InvalidBucketName', name)
  }
})

function md5Etag(body: string): string {
  return `"${createHash('md5').update(body).digest('hex')}"`
}

function pagedKey(index: number): string {
  return `obj-${String(index).padStart(4, '0')}`
}

function pagedBody(index: number): string {
  return `body of object ${index} `.repeat(1 + (index % 4))
}

function pagedType(index: number): string {
  return index % 2 === 0 ? 'text/plain' : 'application/json'
}

/** Uploads the paged bucket's objects through S3, at most UPLOAD_CONCURRENCY at a time. */
async function uploadPaged(): Promise<void> {
  await s3.send(new CreateBucketCommand({ Bucket: 'paged' }))
  let next = 0
  const worker = async (): Promise<void> => {
    for (let index = next++; index < PAGED_OBJECTS; index = next++) {
      await s3.send(
        new PutObjectCommand({
          Bucket: 'paged',
          Key: pagedKey(index),
          Body: pagedBody(index),
          ContentType: pagedType(index),
        }),
      )
    }
  }
  await Promise.all(Array.from({ length: UPLOAD_CONCURRENCY }, worker))
}

interface ObjectJson {
  key: string
  size: number
  etag: string
  last_modified: string
  content_type: string
}

interface ObjectListJson {
  objects: ObjectJson[]
  is_truncated: boolean
  next_continuation_token: string | null
  key_count: number
  prefix: string
}

const EMPTY_LISTING: ObjectListJson = {
  objects: [],
  is_truncated: false,
  next_continuation_token: null,
  key_count: 0,
  prefix: '',
}

async function listPage(bucket: string, query: Record<string, string>): Promise<ObjectListJson> {
  const search = new URLSearchParams(query).toString()
  const answer = await call('GET', `/buckets/${bucket}/objects?${search}`, { token: root })
  expectOk(answer, 200, search)
  const page = answer.json as ObjectListJson
  assert.equal(Object.keys(page).sort(), Object.keys(EMPTY_LISTING).sort())
  assert.is(page.key_count, page.objects.length)
  assert.is(page.is_truncated, page.next_continuation_token !== null)
  return page
}

/** Every page of a listing, following continuation tokens (bounded). */
async function listAll(bucket: string, query: Record<string, string>): Promise<ObjectListJson[]> {
  const pages: ObjectListJson[] = []
  let token: string | null = null
  do {
    assert.ok(pages.length < 20, 'listing does not end')
    const next: Record<string, string> =
      token === null ? query : { ...query, 'continuation-token': token }
    const page = await listPage(bucket, next)
    pages.push(page)
    token = page.next_continuation_token
  } while (token !== null)
  return pages
}

test('listing: 2500 objects page by page with exact entries', async () => {
  await uploadPaged()
  const pages = await listAll('paged', {})
  assert.equal(
    pages.map((page) => page.key_count),
    [1000, 1000, 500],
  )
  const objects = pages.flatMap((page) => page.objects)
  assert.equal(
    objects.map((object) => object.key),
    Array.from({ length: PAGED_OBJECTS }, (_, i) => pagedKey(i)),
  )
  const fields = ['content_type', 'etag', 'key', 'last_modified', 'size']
  objects.forEach((object, index) => {
    assert.equal(Object.keys(object).sort(), fields)
    assert.is(object.size, Buffer.byteLength(pagedBody(index)), object.key)
    assert.is(object.etag, md5Etag(pagedBody(index)), object.key)
    assert.is(object.content_type, pagedType(index), object.key)
    assertRecent(object.last_modified, object.key)
  })
  for (const page of pages) assert.is(page.prefix, '')
  const got = await s3.send(new GetObjectCommand({ Bucket: 'paged', Key: pagedKey(7) }))
  assert.is(got.ETag, objects[7]?.etag)
  assert.is(await got.Body?.transformToString(), pagedBody(7))
})

test('listing: prefix, max-keys (0, small, clamped) and continuation within a prefix', async () => {
  const prefixed = await listAll('paged', { prefix: 'obj-1', 'max-keys': '700' })
  assert.equal(
    prefixed.map((page) => page.key_count),
    [700, 300],
  )
  const keys = prefixed.flatMap((page) => page.objects.map((object) => object.key))
  assert.equal(
    keys,
    Array.from({ length: 1000 }, (_, i) => pagedKey(1000 + i)),
  )
  for (const page of prefixed) assert.is(page.prefix, 'obj-1')
  const small = await listPage('paged', { 'max-keys': '7' })
  assert.is(small.key_count, 7)
  assert.ok(small.is_truncated)
  const clamped = await listPage('paged', { 'max-keys': '5000' })
  assert.is(clamped.key_count, 1000)
  assert.equal(await listPage('paged', { 'max-keys': '0' }), EMPTY_LISTING)
  assert.equal(await listPage('paged', { prefix: 'zzz' }), { ...EMPTY_LISTING, prefix: 'zzz' })
})

test('listing: bad max-keys and tokens 400, unknown bucket 404, empty bucket 200', async () => {
  for (const query of [
    'max-keys=abc',
    'max-keys=-1',
    'max-keys=1.5',
    'max-keys=',
    'max-keys=1e3',
  ]) {
    const answer = await call('GET', `/buckets/paged/objects?${query}`, { token: root })
    expectFailure(answer, 400, 'InvalidData', query)
  }
  for (const token of ['!!!', 'bm90LW91cnM', '', 'x'.repeat(3000)]) {
    const query = new URLSearchParams({ 'continuation-token': token }).toString()
    const answer = await call('GET', `/buckets/paged/objects?${query}`, { token: root })
    expectFailure(answer, 400, 'InvalidData', token.slice(0, 20))
  }
  const missing = await call('GET', '/buckets/no-such-bucket/objects', { token: root })
  expectFailure(missing, 404, 'NoSuchBucket')
  const invalid = await call('GET', '/buckets/Bad_Name/objects', { token: root })
  expectFailure(invalid, 404, 'NoSuchBucket')
  expectOk(await call('PUT', '/buckets/empty-one', { token: root }), 201)
  assert.equal(await listPage('empty-one', {}), EMPTY_LISTING)
})

interface BucketStatsJson {
  name: string
  objects_count: number
  storage_used_bytes: number
  created_at: string
}

test('bucket stats: exact counts and bytes per bucket, one entry per bucket', async () => {
  await s3.send(new CreateBucketCommand({ Bucket: 'stats-a' }))
  for (const [i, size] of [10, 20, 30].entries()) {
    await s3.send(new PutObjectCommand({ Bucket: 'stats-a', Key: `k${i}`, Body: 'x'.repeat(size) }))
  }
  // An overwrite replaces bytes, a delete removes them: 20 + 5 bytes in 2 objects remain.
  await s3.send(new PutObjectCommand({ Bucket: 'stats-a', Key: 'k2', Body: 'x'.repeat(5) }))
  await s3.send(new DeleteObjectCommand({ Bucket: 'stats-a', Key: 'k0' }))
  const answer = await call('GET', '/bucket-stats', { token: root })
  expectOk(answer, 200)
  const stats = answer.json as BucketStatsJson[]
  const listed = await s3.send(new ListBucketsCommand({}))
  const bucketNames = (listed.Buckets ?? []).map((bucket) => bucket.Name ?? '')
  assert.equal(stats.map((entry) => entry.name).sort(), bucketNames.sort())
  const byName = new Map(stats.map((entry) => [entry.name, entry]))
  const a = byName.get('stats-a')
  assert.ok(a !== undefined)
  assert.equal(Object.keys(a).sort(), ['created_at', 'name', 'objects_count', 'storage_used_bytes'])
  assert.is(a.objects_count, 2)
  assert.is(a.storage_used_bytes, 25)
  assertRecent(a.created_at, 'created_at')
  let pagedBytes = 0
  for (let i = 0; i < PAGED_OBJECTS; i += 1) pagedBytes += Buffer.byteLength(pagedBody(i))
  assert.is(byName.get('paged')?.objects_count, PAGED_OBJECTS)
  assert.is(byName.get('paged')?.storage_used_bytes, pagedBytes)
  assert.is(byName.get('empty-one')?.objects_count, 0)
  assert.is(byName.get('empty-one')?.storage_used_bytes, 0)
})

test('delete bucket: non-empty 409, bad force 400, force=true 204, unknown 404', async () => {
  expectFailure(await call('DELETE', '/buckets/paged', { token: root }), 409, 'BucketNotEmpty')
  const notForced = await call('DELETE', '/buckets/paged?force=false', { token: root })
  expectFailure(notForced, 409, 'BucketNotEmpty')
  for (const force of ['yes', '1', 'TRUE', '']) {
    const answer = await call('DELETE', `/buckets/paged?force=${force}`, { token: root })
    expectFailure(answer, 400, 'InvalidData', force)
  }
  const forced = await call('DELETE', '/buckets/paged?force=true', { token: root })
  assert.is(forced.status, 204, forced.text)
  assert.is(forced.text, '')
  const gone = await s3.send(new HeadBucketCommand({ Bucket: 'paged' })).catch((e: unknown) => e)
  assert.is((gone as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode, 404)
  expectFailure(await call('GET', '/buckets/paged/objects', { token: root }), 404, 'NoSuchBucket')
  expectFailure(await call('DELETE', '/buckets/paged', { token: root }), 404, 'NoSuchBucket')
  expectFailure(await call('DELETE', '/buckets/Bad_Name', { token: root }), 404, 'NoSuchBucket')
  const empty = await call('DELETE', '/buckets/empty-one', { token: root })
  assert.is(empty.status, 204)
  const stats = await call('GET', '/bucket-stats', { token: root })
  const names = (stats.json as BucketStatsJson[]).map((entry) => entry.name)
  assert.not.ok(names.includes('paged') || names.includes('empty-one'))
})

test('bodies over 64 KiB are 400 InvalidData, announced or streamed', async () => {
  const padding = 'x'.repeat(64 * 1024)
  const announced = JSON.stringify({ username: 'big_body', password: padding, role: 'Reader' })
  const first = await call('POST', '/users', { token: root, rawBody: announced })
  expectFailure(first, 400, 'InvalidData', 'announced')
  const megabyte = new Uint8Array(1024 * 1024).fill(0x20)
  expectFailure(await call('POST', '/login', { rawBody: megabyte }), 400, 'InvalidData', '1 MiB')
  // No Content-Length: the body is counted while it arrives.
  let sent = 0
  const chunk = new Uint8Array(16 * 1024).fill(0x20)
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= 256 * 1024) return controller.close()
      sent += chunk.length
      controller.enqueue(chunk)
    },
  })
  const streamed = await call('PUT', `/users/${UNKNOWN_ID}`, { token: root, rawBody: stream })
  expectFailure(streamed, 400, 'InvalidData', 'streamed')
  // Exactly at the limit is accepted (JSON may carry that much whitespace).
  const json = JSON.stringify({
    username: 'exact_size',
    password: 'exact-password',
    role: 'Reader',
  })
  const exact = json + ' '.repeat(64 * 1024 - json.length)
  assert.is(Buffer.byteLength(exact), 64 * 1024)
  expectOk(await call('POST', '/users', { token: root, rawBody: exact }), 201, 'exact')
})

test('unknown admin paths 404 NotFound, known paths with another method 405', async () => {
  for (const path of ['', '/', '/nope', '/users/x/y/z', '/buckets', '/login/x', '/users/']) {
    expectFailure(await call('GET', path, { token: root }), 404, 'NotFound', path)
  }
  const wrong: [string, string][] = [
    ['GET', '/login'],
    ['PATCH', '/users'],
    ['DELETE', '/users'],
    ['POST', `/users/${UNKNOWN_ID}`],
    ['GET', `/users/${UNKNOWN_ID}/credentials`],
    ['GET', '/buckets/some-bucket'],
    ['POST', '/buckets/some-bucket/objects'],
    ['POST', '/bucket-stats'],
  ]
  for (const [method, path] of wrong) {
    expectFailure(await call(method, path, { token: root }), 405, 'MethodNotAllowed', path)
  }
})

test('503 ServiceUnavailable with Retry-After while iam restarts, then service again', async () => {
  // Held down for 2 s, so that a call sees it down however fast or busy the machine is.
  const killed = await signedRequest(server.url, {
    method: 'POST',
    path: '/admin/chaos/kill/iam',
    query: { down_ms: '2000' },
  })
  assert.is(killed.status, 200)
  // The kill lands a moment after its answer: poll until iam is down, then until it is back.
  const statuses: number[] = []
  let unavailable: Answer | undefined
  const deadline = Date.now() + POLL_MS_MAX
  while (Date.now() < deadline && statuses.length < 2_000) {
    const answer = await call('GET', '/users', { token: root })
    statuses.push(answer.status)
    if (answer.status === 503) unavailable ??= answer
    if (answer.status === 200 && unavailable !== undefined) break
    await sleep(10) // Paced: the count bound must outlast the 2 s hold.
  }
  assert.ok(unavailable !== undefined, `no 503 seen: ${statuses.join(',')}`)
  expectFailure(unavailable, 503, 'ServiceUnavailable')
  assert.is(unavailable.headers.get('retry-after'), '1')
  assert.ok(
    statuses.every((status) => status === 200 || status === 503),
    statuses.join(','),
  )
  assert.is(statuses[statuses.length - 1], 200, 'iam came back, and the token still works')
})

test('admin requests are counted in /metrics under their operations', async () => {
  const text = await (await fetch(`${server.url}/metrics`)).text()
  const count = (labels: string): number => {
    const line = text.split('\n').find((l) => l.startsWith(`svc_http_requests_total{${labels}}`))
    return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1))
  }
  assert.ok(count('operation="AdminLogin",method="POST",status="200"') >= 5)
  assert.ok(count('operation="AdminLogin",method="POST",status="401"') >= 3)
  assert.ok(count('operation="AdminCreateUser",method="POST",status="201"') >= 5)
  assert.ok(count('operation="AdminListObjects",method="GET",status="200"') >= 3)
  assert.ok(count('operation="AdminNotFound",method="GET",status="404"') >= 1)
  assert.ok(count('operation="AdminMethodNotAllowed",method="PATCH",status="405"') >= 1)
})

test('each admin request is logged once with its id; no secret reaches the log', () => {
  const output = server.output()
  const lines = output.split('\n').filter((line) => line.includes('"admin request'))
  const logged = new Set<string>()
  for (const line of lines) {
    const entry = JSON.parse(line) as Record<string, unknown>
    for (const field of ['requestId', 'method', 'route', 'status', 'ms', 'operation']) {
      assert.ok(field in entry, `${field} in ${line}`)
    }
    // ISO-8601 times, level names, and who asked with how many bytes.
    assert.match(String(entry['time']), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    assert.ok(entry['level'] === 'info' || entry['level'] === 'error', line)
    assert.is(entry['client'], '127.0.0.1', line)
    assert.type(entry['userAgent'], 'string', line)
    assert.ok(Number(entry['bytesOut']) > 0, line)
    assert.type(entry['bytesIn'], 'number', line)
    assert.not.ok(logged.has(String(entry['requestId'])), 'logged twice')
    logged.add(String(entry['requestId']))
  }
  for (const id of requestIds) assert.ok(logged.has(id), `request ${id} not logged`)
  for (const secret of secrets) assert.not.ok(output.includes(secret), 'a secret in the log')
  assert.not.ok(output.includes('$argon2'), 'a password hash in the log')
})

test('a node without SVC_ROOT_PASSWORD: admin API 403 naming it, S3 still works', async () => {
  const bare = await startServer()
  const client = bare.client()
  try {
    // Every route, with a token or without one, says how to enable the admin API.
    const headers = [undefined, { authorization: 'Bearer a.b.c' }, { authorization: 'Basic x' }]
    for (const [method, path] of protectedRoutes('00000000-0000-4000-8000-000000000000')) {
      for (const header of headers) {
        const answer = await call(method, path, {
          url: bare.url,
          ...(header && { headers: header }),
        })
        const what = `${method} ${path} ${JSON.stringify(header)}`
        expectFailure(answer, 403, 'Forbidden', what)
        assert.match((answer.json as { error: string }).error, 'SVC_ROOT_PASSWORD', what)
      }
    }
    // And the node said so once, in one line, at start.
    const said = bare
      .output()
      .split('\n')
      .filter((line) => line.includes('admin API disabled'))
    assert.is(said.length, 1, bare.output())
    assert.match(said[0] ?? '', 'SVC_ROOT_PASSWORD')
    const answer = await call('POST', '/login', {
      url: bare.url,
      body: { username: 'root', password: 'anything' },
    })
    expectFailure(answer, 403, 'Forbidden')
    assert.match((answer.json as { error: string }).error, 'SVC_ROOT_PASSWORD')
    const users = await call('GET', '/users', { url: bare.url, token: 'a.b.c' })
    expectFailure(users, 403, 'Forbidden')
    await client.send(new CreateBucketCommand({ Bucket: 'still-s3' }))
    await client.send(new PutObjectCommand({ Bucket: 'still-s3', Key: 'k', Body: 'works' }))
    const got = await client.send(new GetObjectCommand({ Bucket: 'still-s3', Key: 'k' }))
    assert.is(await got.Body?.transformToString(), 'works')
  } finally {
    client.destroy()
    await bare.stop()
    bare.cleanup()
  }
})

test.run()
