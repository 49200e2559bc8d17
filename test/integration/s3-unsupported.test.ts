/** Goal: a request that asks for an S3 feature the service does not have (server-side encryption,
 * a customer key, an ACL that grants writes or names grantees, a storage class, a website) is
 * refused as Amazon S3 refuses what it does not implement, `501 NotImplemented` naming the header,
 * or `400` for a value S3 itself refuses, and does nothing: no object stored, no bucket created.
 * What is true of every object anyway (`bucket-owner-full-control` on objects) is accepted.
 * Method: the real server, driven by @aws-sdk/client-s3 where it can say the request, else by raw
 * signed requests; form uploads signed by @aws-sdk/s3-presigned-post. */
import * as assert from 'uvu/assert'
import { createHash } from 'node:crypto'
import {
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  PutBucketEncryptionCommand,
  PutBucketWebsiteCommand,
  PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3'
import { createPresignedPost } from '@aws-sdk/s3-presigned-post'
import { failure } from '../support/s3-failure.js'
import { errorCode, signedRequest, type RawResponse } from '../support/signed-request.js'
import { s3, server, test, useS3Suite } from '../support/s3-suite.js'

const BUCKET = 'unsupported'

/** The cases that also run through a gateway (test/support/s3-suite.ts). */
useS3Suite(BUCKET, [
  'PutObject with a customer key (SSE-C)',
  'the encryption and website subresources',
])

const CUSTOMER_KEY = Buffer.alloc(32, 7)
const CUSTOMER_KEY_MD5 = createHash('md5').update(CUSTOMER_KEY).digest('base64')
const SSE_C = {
  'x-amz-server-side-encryption-customer-algorithm': 'AES256',
  'x-amz-server-side-encryption-customer-key': CUSTOMER_KEY.toString('base64'),
  'x-amz-server-side-encryption-customer-key-md5': CUSTOMER_KEY_MD5,
}

function put(key: string, headers: Record<string, string>): Promise<RawResponse> {
  return signedRequest(server.url, {
    method: 'PUT',
    path: `/${BUCKET}/${key}`,
    headers: { 'content-length': '5', ...headers },
    body: 'plain',
  })
}

/** A 501 NotImplemented whose message and <Header> name `header`. */
function expectNotImplemented(response: RawResponse, header: string, what = ''): void {
  const body = response.body.toString()
  assert.is(response.status, 501, `${what} status; body: ${body}`)
  assert.is(errorCode(response), 'NotImplemented', `${what} code; body: ${body}`)
  assert.ok(body.includes(`<Header>${header}</Header>`), `${what} <Header>; body: ${body}`)
  assert.match(/<Message>([^<]*)<\/Message>/.exec(body)?.[1] ?? '', header, `${what} message`)
}

function expectInvalid(response: RawResponse, what = ''): void {
  const body = response.body.toString()
  assert.is(response.status, 400, `${what} status; body: ${body}`)
  assert.is(errorCode(response), 'InvalidArgument', `${what} code; body: ${body}`)
}

async function absent(key: string): Promise<boolean> {
  const head = await failure(() => s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key })))
  return head.status === 404
}

test('PutObject with a customer key (SSE-C) is 501 and stores nothing', async () => {
  const refused = await failure(() =>
    s3.send(
      new PutObjectCommand({
        Bucket: BUCKET,
        Key: 'sse-c',
        Body: 'secret',
        SSECustomerAlgorithm: 'AES256',
        SSECustomerKey: CUSTOMER_KEY.toString('base64'),
      }),
    ),
  )
  assert.equal(refused, { name: 'NotImplemented', status: 501 })
  assert.ok(await absent('sse-c'))
  expectNotImplemented(
    await put('sse-c-raw', SSE_C),
    'x-amz-server-side-encryption-customer-algorithm',
  )
  assert.ok(await absent('sse-c-raw'))
})

test('an incomplete or inconsistent customer key is 400, as S3 checks it', async () => {
  const { ['x-amz-server-side-encryption-customer-key-md5']: _md5, ...withoutMd5 } = SSE_C
  expectInvalid(await put('sse-c-bad', withoutMd5), 'no key MD5')
  const wrongMd5 = { ...SSE_C, 'x-amz-server-side-encryption-customer-key-md5': 'AAAA' }
  expectInvalid(await put('sse-c-bad', wrongMd5), 'wrong key MD5')
  const wrongAlgorithm = { ...SSE_C, 'x-amz-server-side-encryption-customer-algorithm': 'DES' }
  expectInvalid(await put('sse-c-bad', wrongAlgorithm), 'algorithm')
  assert.ok(await absent('sse-c-bad'))
})

test('GET and HEAD with a customer key are 501, never the plaintext', async () => {
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'plain', Body: 'plain' }))
  for (const method of ['GET', 'HEAD']) {
    const read = await signedRequest(server.url, {
      method,
      path: `/${BUCKET}/plain`,
      headers: SSE_C,
    })
    assert.is(read.status, 501, method)
    if (method === 'GET') {
      expectNotImplemented(read, 'x-amz-server-side-encryption-customer-algorithm', method)
    }
  }
})

for (const method of ['AES256', 'aws:kms', 'aws:kms:dsse']) {
  test(`PutObject with x-amz-server-side-encryption: ${method}: 501, nothing stored`, async () => {
    const key = `sse-${method.replace(/:/g, '-')}`
    expectNotImplemented(
      await put(key, { 'x-amz-server-side-encryption': method }),
      'x-amz-server-side-encryption',
    )
    assert.ok(await absent(key))
  })
}

test('an unknown encryption method, or a KMS key without aws:kms, is 400', async () => {
  expectInvalid(await put('sse-bad', { 'x-amz-server-side-encryption': 'ROT13' }), 'method')
  const keyOnly = { 'x-amz-server-side-encryption-aws-kms-key-id': 'alias/mine' }
  expectInvalid(await put('sse-bad', keyOnly), 'key id alone')
  expectInvalid(
    await put('sse-bad', { 'x-amz-server-side-encryption': 'AES256', ...SSE_C }),
    'SSE with SSE-C',
  )
  assert.ok(await absent('sse-bad'))
})

test('CopyObject with encryption of the copy or a customer key of its source is 501', async () => {
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'source', Body: 'source' }))
  const copy = (headers: Record<string, string>) =>
    signedRequest(server.url, {
      method: 'PUT',
      path: `/${BUCKET}/copied`,
      headers: { 'x-amz-copy-source': `/${BUCKET}/source`, ...headers },
    })
  expectNotImplemented(
    await copy({ 'x-amz-server-side-encryption': 'AES256' }),
    'x-amz-server-side-encryption',
  )
  expectNotImplemented(await copy(SSE_C), 'x-amz-server-side-encryption-customer-algorithm')
  const sourceKey = Object.fromEntries(
    Object.entries(SSE_C).map(([name, value]) => [
      name.replace('x-amz-', 'x-amz-copy-source-'),
      value,
    ]),
  )
  expectNotImplemented(
    await copy(sourceKey),
    'x-amz-copy-source-server-side-encryption-customer-algorithm',
  )
  assert.ok(await absent('copied'))
  const sdk = await failure(() =>
    s3.send(
      new CopyObjectCommand({
        Bucket: BUCKET,
        Key: 'copied',
        CopySource: `${BUCKET}/source`,
        ServerSideEncryption: 'aws:kms',
      }),
    ),
  )
  assert.equal(sdk, { name: 'NotImplemented', status: 501 })
})

test('CreateMultipartUpload with encryption, UploadPart with a customer key: 501', async () => {
  const create = await failure(() =>
    s3.send(
      new CreateMultipartUploadCommand({
        Bucket: BUCKET,
        Key: 'mpu',
        ServerSideEncryption: 'AES256',
      }),
    ),
  )
  assert.equal(create, { name: 'NotImplemented', status: 501 })
  const upload = await s3.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: 'mpu' }))
  const part = await failure(() =>
    s3.send(
      new UploadPartCommand({
        Bucket: BUCKET,
        Key: 'mpu',
        UploadId: upload.UploadId,
        PartNumber: 1,
        Body: 'part',
        SSECustomerAlgorithm: 'AES256',
        SSECustomerKey: CUSTOMER_KEY.toString('base64'),
      }),
    ),
  )
  assert.equal(part, { name: 'NotImplemented', status: 501 })
})

test('an ACL that grants writes or names grantees is 501 and stores nothing', async () => {
  const refused = await failure(() =>
    s3.send(
      new PutObjectCommand({ Bucket: BUCKET, Key: 'public', Body: 'x', ACL: 'public-read-write' }),
    ),
  )
  assert.equal(refused, { name: 'NotImplemented', status: 501 })
  assert.ok(await absent('public'))
  expectNotImplemented(await put('public', { 'x-amz-acl': 'public-read-write' }), 'x-amz-acl')
  expectNotImplemented(
    await put('public', {
      'x-amz-grant-read': 'uri="http://acs.amazonaws.com/groups/global/AllUsers"',
    }),
    'x-amz-grant-read',
  )
  expectInvalid(await put('public', { 'x-amz-acl': 'everyone' }), 'unknown canned ACL')
  assert.ok(await absent('public'))
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'private', Body: 'x', ACL: 'private' }))
  await s3.send(
    new PutObjectCommand({
      Bucket: BUCKET,
      Key: 'owner-full',
      Body: 'x',
      ACL: 'bucket-owner-full-control',
    }),
  )
  assert.not.ok(await absent('private'))
  assert.not.ok(await absent('owner-full'))
})

test('a storage class other than STANDARD is 501, an unknown one 400; STANDARD kept', async () => {
  const refused = await failure(() =>
    s3.send(
      new PutObjectCommand({ Bucket: BUCKET, Key: 'cold', Body: 'x', StorageClass: 'GLACIER' }),
    ),
  )
  assert.equal(refused, { name: 'NotImplemented', status: 501 })
  expectNotImplemented(
    await put('cold', { 'x-amz-storage-class': 'STANDARD_IA' }),
    'x-amz-storage-class',
  )
  const unknown = await put('cold', { 'x-amz-storage-class': 'FREEZER' })
  assert.is(unknown.status, 400)
  assert.is(errorCode(unknown), 'InvalidStorageClass')
  assert.ok(await absent('cold'))
  await s3.send(
    new PutObjectCommand({ Bucket: BUCKET, Key: 'warm', Body: 'x', StorageClass: 'STANDARD' }),
  )
  assert.not.ok(await absent('warm'))
})

test('a website redirect is 501 and stores nothing', async () => {
  const where = { 'x-amz-website-redirect-location': '/elsewhere' }
  expectNotImplemented(await put('redirect', where), 'x-amz-website-redirect-location')
  assert.ok(await absent('redirect'))
})

test('CreateBucket with a public-read-write ACL or ObjectWriter ownership: 501', async () => {
  const refused = await failure(() =>
    s3.send(new CreateBucketCommand({ Bucket: 'public-bucket', ACL: 'public-read-write' })),
  )
  assert.equal(refused, { name: 'NotImplemented', status: 501 })
  const writer = await failure(() =>
    s3.send(new CreateBucketCommand({ Bucket: 'public-bucket', ObjectOwnership: 'ObjectWriter' })),
  )
  assert.equal(writer, { name: 'NotImplemented', status: 501 })
  const head = await failure(() => s3.send(new HeadBucketCommand({ Bucket: 'public-bucket' })))
  assert.is(head.status, 404)
  await s3.send(
    new CreateBucketCommand({
      Bucket: 'private-bucket',
      ACL: 'private',
      ObjectOwnership: 'BucketOwnerEnforced',
    }),
  )
})

test('a form upload with a public-read-write acl or encryption: 501, nothing kept', async () => {
  for (const [name, value, header] of [
    ['acl', 'public-read-write', 'x-amz-acl'],
    ['x-amz-server-side-encryption', 'AES256', 'x-amz-server-side-encryption'],
  ] as const) {
    const { url, fields } = await createPresignedPost(s3, {
      Bucket: BUCKET,
      Key: 'form',
      Fields: { [name]: value },
    })
    const boundary = '----unsupported-form'
    const parts = Object.entries(fields).map(
      ([field, text]) =>
        `--${boundary}\r\nContent-Disposition: form-data; name="${field}"\r\n\r\n${text}\r\n`,
    )
    const body =
      parts.join('') +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="f"\r\n\r\n` +
      `content\r\n--${boundary}--\r\n`
    const answer = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
      body,
    })
    const text = await answer.text()
    assert.is(answer.status, 501, `${name}: ${text}`)
    assert.ok(text.includes(`<Header>${header}</Header>`), text)
  }
  assert.ok(await absent('form'))
})

test('the encryption and website subresources are 501', async () => {
  const calls = [
    () =>
      s3.send(
        new PutBucketEncryptionCommand({
          Bucket: BUCKET,
          ServerSideEncryptionConfiguration: {
            Rules: [{ ApplyServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
          },
        }),
      ),
    () =>
      s3.send(
        new PutBucketWebsiteCommand({
          Bucket: BUCKET,
          WebsiteConfiguration: { IndexDocument: { Suffix: 'index.html' } },
        }),
      ),
  ]
  for (const call of calls) {
    assert.equal(await failure(call), { name: 'NotImplemented', status: 501 })
  }
})

test.run()
