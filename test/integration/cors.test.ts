/** @module Integration tests of bucket CORS. Goal: PutBucketCors, GetBucketCors and
 * DeleteBucketCors behave as Amazon S3's (exact round trip, 404 NoSuchCORSConfiguration, 204 on
 * delete, NoSuchBucket, MalformedXML and InvalidRequest with S3's messages, a body over 64 KiB
 * refused, Readers may read but not change rules); preflights are answered without credentials and
 * matched as S3 matches them (wildcard origins, methods, headers; 403 AccessForbidden when denied);
 * actual requests carrying Origin get the first matching rule's headers, error answers included;
 * rules survive a restart and go with their bucket. Method: the real server, driven by the current
 * @aws-sdk/client-s3 and by raw HTTP (signed, or unsigned for preflights) where the SDK hides the
 * headers. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import {
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteBucketCorsCommand,
  GetBucketCorsCommand,
  PutBucketCorsCommand,
  type CORSRule,
  type S3Client,
} from '@aws-sdk/client-s3'
import { startServer, type TestServer } from '../support/server.js'
import { errorCode, send, signedRequest, type RawResponse } from '../support/signed-request.js'

const ROOT_PASSWORD = 'root-password-for-cors-tests'
const VARY = 'Origin, Access-Control-Request-Headers, Access-Control-Request-Method'
const NOT_ALLOWED =
  'CORSResponse: This CORS request is not allowed. This is usually because the evalution of ' +
  'Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers are ' +
  "not whitelisted by the resource's CORS spec."

let server: TestServer
let s3: S3Client

/** Two rules: uploads from any subdomain of example.com, and reads from anywhere. */
const RULES: CORSRule[] = [
  {
    ID: 'uploads',
    AllowedOrigins: ['http://*.example.com'],
    AllowedMethods: ['PUT', 'GET'],
    AllowedHeaders: ['content-type', 'X-Amz-*'],
    ExposeHeaders: ['ETag', 'x-amz-version-id'],
    MaxAgeSeconds: 600,
  },
  { AllowedOrigins: ['*'], AllowedMethods: ['GET', 'HEAD'] },
]

test.before(async () => {
  server = await startServer({ env: { SVC_ROOT_PASSWORD: ROOT_PASSWORD } })
  s3 = server.client()
  for (const bucket of ['rules', 'plain'])
    await s3.send(new CreateBucketCommand({ Bucket: bucket }))
  await s3.send(
    new PutBucketCorsCommand({ Bucket: 'rules', CORSConfiguration: { CORSRules: RULES } }),
  )
  const put = await signedRequest(server.url, { method: 'PUT', path: '/rules/seen', body: 'hello' })
  assert.is(put.status, 200)
})

test.after(async () => {
  await server.stop()
  server.cleanup()
})

interface SdkFailure {
  name: string
  status: number | undefined
  message: string
}

async function failure(run: () => Promise<unknown>): Promise<SdkFailure> {
  try {
    await run()
  } catch (error) {
    const e = error as { name: string; message: string; $metadata?: { httpStatusCode?: number } }
    return { name: e.name, status: e.$metadata?.httpStatusCode, message: e.message }
  }
  throw new Error('expected the call to fail')
}

function options(path: string, headers: Record<string, string>): Promise<RawResponse> {
  const host = new URL(server.url).host
  return send(server.url, 'OPTIONS', path, { host, ...headers })
}

function xmlElement(response: RawResponse, name: string): string | undefined {
  return new RegExp(`<${name}>([^<]*)</${name}>`).exec(response.body.toString())?.[1]
}

test('PutBucketCors then GetBucketCors gives back exactly the rules put', async () => {
  const got = await s3.send(new GetBucketCorsCommand({ Bucket: 'rules' }))
  assert.equal(got.CORSRules, RULES)
  const raw = await signedRequest(server.url, {
    method: 'GET',
    path: '/rules',
    query: { cors: '' },
  })
  assert.is(raw.status, 200)
  assert.is(raw.headers['content-type'], 'application/xml')
  assert.match(
    raw.body.toString(),
    '<CORSConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><CORSRule>' +
      '<ID>uploads</ID>' +
      '<AllowedHeader>content-type</AllowedHeader><AllowedHeader>X-Amz-*</AllowedHeader>',
  )
})

test('GetBucketCors without rules is 404 NoSuchCORSConfiguration; delete always 204', async () => {
  await s3.send(new CreateBucketCommand({ Bucket: 'short-lived' }))
  const none = await failure(() => s3.send(new GetBucketCorsCommand({ Bucket: 'short-lived' })))
  assert.equal([none.name, none.status], ['NoSuchCORSConfiguration', 404])
  assert.is(none.message, 'The CORS configuration does not exist')
  const rules = { CORSRules: [{ AllowedOrigins: ['*'], AllowedMethods: ['GET'] }] }
  await s3.send(new PutBucketCorsCommand({ Bucket: 'short-lived', CORSConfiguration: rules }))
  const deleted = await s3.send(new DeleteBucketCorsCommand({ Bucket: 'short-lived' }))
  assert.is(deleted.$metadata.httpStatusCode, 204)
  const gone = await failure(() => s3.send(new GetBucketCorsCommand({ Bucket: 'short-lived' })))
  assert.equal([gone.name, gone.status], ['NoSuchCORSConfiguration', 404])
  const again = await s3.send(new DeleteBucketCorsCommand({ Bucket: 'short-lived' }))
  assert.is(again.$metadata.httpStatusCode, 204)
})

test('every CORS operation on a bucket that does not exist is 404 NoSuchBucket', async () => {
  const rules = { CORSRules: [{ AllowedOrigins: ['*'], AllowedMethods: ['GET'] }] }
  const calls = [
    () => s3.send(new PutBucketCorsCommand({ Bucket: 'missing', CORSConfiguration: rules })),
    () => s3.send(new GetBucketCorsCommand({ Bucket: 'missing' })),
    () => s3.send(new DeleteBucketCorsCommand({ Bucket: 'missing' })),
  ]
  for (const call of calls) {
    const failed = await failure(call)
    assert.equal([failed.name, failed.status], ['NoSuchBucket', 404])
  }
})

function putCors(body: string | Buffer): Promise<RawResponse> {
  return signedRequest(server.url, {
    method: 'PUT',
    path: '/plain',
    query: { cors: '' },
    headers: { 'content-type': 'application/xml' },
    body,
  })
}

const GET_ANY = '<AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod>'

function cors(rules: string): string {
  return `<CORSConfiguration><CORSRule>${rules}</CORSRule></CORSConfiguration>`
}

test('bodies outside the schema are 400 MalformedXML and change nothing', async () => {
  const bodies = [
    '',
    'not xml at all',
    '<CORSConfiguration></CORSConfiguration>',
    `<CORSConfig><CORSRule>${GET_ANY}</CORSRule></CORSConfig>`,
    cors('<AllowedMethod>GET</AllowedMethod>'),
    cors('<AllowedOrigin>*</AllowedOrigin>'),
    cors(`${GET_ANY}<MaxAgeSeconds>soon</MaxAgeSeconds>`),
    cors(`${GET_ANY}<Unknown>x</Unknown>`),
    `<CORSConfiguration><CORSRule>${GET_ANY}</CORSRule>`,
  ]
  for (const body of bodies) {
    const response = await putCors(body)
    assert.is(response.status, 400, body)
    assert.is(errorCode(response), 'MalformedXML', body)
  }
  const none = await failure(() => s3.send(new GetBucketCorsCommand({ Bucket: 'plain' })))
  assert.is(none.name, 'NoSuchCORSConfiguration')
})

test('well-formed rules S3 refuses are 400 InvalidRequest with its messages', async () => {
  const cases: [string, string][] = [
    [
      cors('<AllowedOrigin>*</AllowedOrigin><AllowedMethod>PATCH</AllowedMethod>'),
      'Found unsupported HTTP method in CORS config. Unsupported method is PATCH',
    ],
    [
      cors('<AllowedOrigin>http://*.*.test</AllowedOrigin><AllowedMethod>GET</AllowedMethod>'),
      'AllowedOrigin "http://*.*.test" can not have more than one wildcard.',
    ],
    [
      cors(`${GET_ANY}<AllowedHeader>x-*-*</AllowedHeader>`),
      'AllowedHeader "x-*-*" can not have more than one wildcard.',
    ],
    [
      `<CORSConfiguration>${`<CORSRule>${GET_ANY}</CORSRule>`.repeat(101)}</CORSConfiguration>`,
      'The number of CORS rules should not exceed allowed limit of 100 rules.',
    ],
  ]
  for (const [body, message] of cases) {
    const response = await putCors(body)
    assert.is(response.status, 400, body)
    assert.is(errorCode(response), 'InvalidRequest', body)
    assert.is(xmlElement(response, 'Message'), message)
  }
  const rules = { CORSRules: [{ AllowedOrigins: ['*'], AllowedMethods: ['OPTIONS'] }] }
  const sdk = await failure(() =>
    s3.send(new PutBucketCorsCommand({ Bucket: 'plain', CORSConfiguration: rules })),
  )
  assert.equal([sdk.name, sdk.status], ['InvalidRequest', 400])
})

test('a configuration body over 64 KiB is 400 MaxMessageLengthExceeded', async () => {
  const rule = `<CORSRule><ID>${'i'.repeat(200)}</ID>${GET_ANY}</CORSRule>`
  const big = `<CORSConfiguration>${rule.repeat(300)}</CORSConfiguration>`
  assert.ok(Buffer.byteLength(big) > 64 * 1024)
  const response = await putCors(big)
  assert.is(response.status, 400)
  assert.is(errorCode(response), 'MaxMessageLengthExceeded')
  const fits = `<CORSConfiguration>${rule.repeat(100)}</CORSConfiguration>`
  assert.ok(Buffer.byteLength(fits) < 64 * 1024)
  assert.is((await putCors(fits)).status, 200)
  await s3.send(new DeleteBucketCorsCommand({ Bucket: 'plain' }))
})

test('other methods on ?cors are 405, and ?cors on an object is no object operation', async () => {
  const post = await signedRequest(server.url, {
    method: 'POST',
    path: '/rules',
    query: { cors: '' },
  })
  assert.equal([post.status, errorCode(post)], [405, 'MethodNotAllowed'])
  const onKey = await signedRequest(server.url, {
    method: 'GET',
    path: '/rules/seen',
    query: { cors: '' },
  })
  assert.equal([onKey.status, errorCode(onKey)], [405, 'MethodNotAllowed'])
})

test('a preflight from a wildcard origin gets origin, credentials, headers, max age', async () => {
  const response = await options('/rules/photos/cat.jpg', {
    origin: 'http://app.example.com',
    'access-control-request-method': 'PUT',
    'access-control-request-headers': 'Content-Type, X-Amz-Date',
  })
  assert.is(response.status, 200, response.body.toString())
  assert.is(response.body.length, 0)
  const h = response.headers
  assert.is(h['access-control-allow-origin'], 'http://app.example.com')
  assert.is(h['access-control-allow-credentials'], 'true')
  assert.is(h['access-control-allow-methods'], 'PUT, GET')
  assert.is(h['access-control-allow-headers'], 'content-type, x-amz-date')
  assert.is(h['access-control-max-age'], '600')
  assert.is(h['access-control-expose-headers'], 'ETag, x-amz-version-id')
  assert.is(h['vary'], VARY)
  assert.is(h['content-length'], '0')
  assert.ok(h['x-amz-request-id'])
})

test('a preflight matching an any-origin rule answers `*` without credentials', async () => {
  const response = await options('/rules', {
    origin: 'https://elsewhere.test',
    'access-control-request-method': 'HEAD',
  })
  assert.is(response.status, 200)
  assert.is(response.headers['access-control-allow-origin'], '*')
  assert.is(response.headers['access-control-allow-credentials'], undefined)
  assert.is(response.headers['access-control-allow-methods'], 'GET, HEAD')
  assert.is(response.headers['access-control-max-age'], undefined)
})

test('preflights no rule allows are 403 AccessForbidden naming method and resource', async () => {
  const denied: [string, Record<string, string>, string][] = [
    // Wrong origin for PUT (only the example.com rule allows PUT).
    ['/rules/k', { origin: 'http://example.org', 'access-control-request-method': 'PUT' }, 'PUT'],
    // Not a subdomain: the wildcard needs the dot.
    ['/rules/k', { origin: 'http://example.com', 'access-control-request-method': 'PUT' }, 'PUT'],
    // Wrong method.
    [
      '/rules/k',
      { origin: 'http://app.example.com', 'access-control-request-method': 'DELETE' },
      'DELETE',
    ],
    // A header no AllowedHeader allows.
    [
      '/rules/k',
      {
        origin: 'http://app.example.com',
        'access-control-request-method': 'PUT',
        'access-control-request-headers': 'content-type, authorization',
      },
      'PUT',
    ],
    // The any-origin rule allows no headers at all.
    [
      '/rules',
      {
        origin: 'https://elsewhere.test',
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'x-amz-date',
      },
      'GET',
    ],
  ]
  for (const [path, headers, method] of denied) {
    const response = await options(path, headers)
    const what = JSON.stringify(headers)
    assert.is(response.status, 403, what)
    assert.is(errorCode(response), 'AccessForbidden', what)
    assert.is(xmlElement(response, 'Message'), NOT_ALLOWED, what)
    assert.is(xmlElement(response, 'Method'), method, what)
    assert.is(xmlElement(response, 'ResourceType'), path === '/rules' ? 'BUCKET' : 'OBJECT')
    assert.is(response.headers['access-control-allow-origin'], undefined, what)
  }
})

test('preflights to a bucket without rules or existence are 403; bad ones 400', async () => {
  const ask = { origin: 'http://app.example.com', 'access-control-request-method': 'GET' }
  const plain = await options('/plain/k', ask)
  assert.equal([plain.status, errorCode(plain)], [403, 'AccessForbidden'])
  assert.is(xmlElement(plain, 'Message'), 'CORSResponse: CORS is not enabled for this bucket.')
  assert.is(xmlElement(plain, 'ResourceType'), 'BUCKET')
  const missing = await options('/no-such-bucket/k', ask)
  assert.equal([missing.status, errorCode(missing)], [403, 'AccessForbidden'])
  assert.is(xmlElement(missing, 'Message'), 'CORSResponse: Bucket not found')
  const noOrigin = await options('/rules/k', { 'access-control-request-method': 'GET' })
  assert.equal([noOrigin.status, errorCode(noOrigin)], [400, 'BadRequest'])
  assert.is(
    xmlElement(noOrigin, 'Message'),
    'Insufficient information. Origin request header needed.',
  )
  const noMethod = await options('/rules/k', { origin: 'http://app.example.com' })
  assert.equal([noMethod.status, errorCode(noMethod)], [400, 'BadRequest'])
  assert.is(xmlElement(noMethod, 'Message'), 'Invalid Access-Control-Request-Method: null')
  const badMethod = await options('/rules/k', { ...ask, 'access-control-request-method': 'PATCH' })
  assert.equal([badMethod.status, errorCode(badMethod)], [400, 'BadRequest'])
  assert.is(xmlElement(badMethod, 'Message'), 'Invalid Access-Control-Request-Method: PATCH')
})

test('actual requests with Origin get the first matching rule, errors included', async () => {
  const origin = { origin: 'http://app.example.com' }
  const put = await signedRequest(server.url, {
    method: 'PUT',
    path: '/rules/from-browser',
    headers: origin,
    body: 'bytes',
  })
  assert.is(put.status, 200)
  assert.is(put.headers['access-control-allow-origin'], 'http://app.example.com')
  assert.is(put.headers['access-control-allow-credentials'], 'true')
  assert.match(put.headers['access-control-expose-headers'] ?? '', /\bETag\b/)
  assert.match(put.headers['access-control-expose-headers'] ?? '', /\bx-amz-version-id\b/)
  assert.is(put.headers['access-control-allow-headers'], undefined)
  assert.is(put.headers['vary'], VARY)
  const get = await signedRequest(server.url, {
    method: 'GET',
    path: '/rules/seen',
    headers: origin,
  })
  assert.is(get.status, 200)
  assert.is(get.body.toString(), 'hello')
  assert.is(get.headers['access-control-allow-methods'], 'PUT, GET')
  const head = await signedRequest(server.url, {
    method: 'HEAD',
    path: '/rules/seen',
    headers: { origin: 'https://elsewhere.test' },
  })
  assert.is(head.status, 200)
  assert.is(head.headers['access-control-allow-origin'], '*')
  const missing = await signedRequest(server.url, {
    method: 'GET',
    path: '/rules/absent',
    headers: origin,
  })
  assert.equal([missing.status, errorCode(missing)], [404, 'NoSuchKey'])
  assert.is(missing.headers['access-control-allow-origin'], 'http://app.example.com')
  const host = new URL(server.url).host
  const unsigned = await send(server.url, 'GET', '/rules/seen', { host, ...origin })
  assert.is(unsigned.status, 403)
  assert.is(unsigned.headers['access-control-allow-origin'], 'http://app.example.com')
})

test('no CORS headers without Origin, without a match or without rules', async () => {
  const requests: [string, Record<string, string>][] = [
    // No Origin.
    ['/rules/seen', {}],
    // A bucket without rules (a listing of it).
    ['/plain', { origin: 'http://app.example.com' }],
  ]
  for (const [path, headers] of requests) {
    const response = await signedRequest(server.url, { method: 'GET', path, headers })
    assert.is(response.status, 200, path)
    assert.is(response.headers['access-control-allow-origin'], undefined, path)
    assert.is(response.headers['vary'], undefined, path)
  }
  const wrongMethod = await signedRequest(server.url, {
    method: 'DELETE',
    path: '/rules/from-browser',
    headers: { origin: 'http://app.example.com' },
  })
  // DELETE is in no rule.
  assert.is(wrongMethod.status, 204)
  assert.is(wrongMethod.headers['access-control-allow-origin'], undefined)
})

async function readerClient(): Promise<S3Client> {
  const call = async (method: string, path: string, token?: string, body?: unknown) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' }
    if (token !== undefined) headers['authorization'] = `Bearer ${token}`
    const response = await fetch(`${server.url}/api/admin${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    assert.ok(response.status < 300, `${method} ${path}: ${response.status}`)
    return (await response.json()) as Record<string, string>
  }
  const { token } = await call('POST', '/login', undefined, {
    username: 'root',
    password: ROOT_PASSWORD,
  })
  const user = await call('POST', '/users', token, {
    username: 'cors_reader',
    password: 'reader-password',
    role: 'Reader',
  })
  const keys = await call('POST', `/users/${user['id'] ?? ''}/credentials`, token)
  return server.client({
    accessKeyId: keys['access_key'] ?? '',
    secretAccessKey: keys['secret_key'] ?? '',
  })
}

test('a Reader may read the rules but not put or delete them', async () => {
  const reader = await readerClient()
  const got = await reader.send(new GetBucketCorsCommand({ Bucket: 'rules' }))
  assert.equal(got.CORSRules, RULES)
  const rules = { CORSRules: [{ AllowedOrigins: ['*'], AllowedMethods: ['GET'] }] }
  const put = await failure(() =>
    reader.send(new PutBucketCorsCommand({ Bucket: 'rules', CORSConfiguration: rules })),
  )
  assert.equal([put.name, put.status], ['AccessDenied', 403])
  const deleted = await failure(() => reader.send(new DeleteBucketCorsCommand({ Bucket: 'rules' })))
  assert.equal([deleted.name, deleted.status], ['AccessDenied', 403])
  assert.equal((await s3.send(new GetBucketCorsCommand({ Bucket: 'rules' }))).CORSRules, RULES)
})

test('rules survive a restart and go with their bucket', async () => {
  const rules = { CORSRules: [{ AllowedOrigins: ['*'], AllowedMethods: ['GET'] }] }
  await s3.send(new CreateBucketCommand({ Bucket: 'recreated' }))
  await s3.send(new PutBucketCorsCommand({ Bucket: 'recreated', CORSConfiguration: rules }))
  await s3.send(new DeleteBucketCommand({ Bucket: 'recreated' }))
  await s3.send(new CreateBucketCommand({ Bucket: 'recreated' }))
  const none = await failure(() => s3.send(new GetBucketCorsCommand({ Bucket: 'recreated' })))
  assert.is(none.name, 'NoSuchCORSConfiguration')
  assert.is(await server.stop(), 0)
  server = await startServer({ dataDir: server.dataDir })
  s3 = server.client()
  assert.equal((await s3.send(new GetBucketCorsCommand({ Bucket: 'rules' }))).CORSRules, RULES)
})

test.run()
