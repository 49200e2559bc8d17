/** Goal: browser form uploads (S3's POST Object) behave as Amazon S3's: a form signed as the AWS
 * SDK's createPresignedPost stores its file (`${filename}` in the key, Content-Type, metadata and
 * tags from fields) and answers as `success_action_status` or `success_action_redirect` say; a bad
 * signature, an expired policy, a failed condition, an extra field or a file outside
 * `content-length-range` is refused with S3's code and message, and stores nothing; an `acl`
 * field of public-read is a Writer's only if it may set ACLs. Method: a
 * real server; policies and signatures from @aws-sdk/s3-presigned-post, the multipart/form-data
 * body built by hand so that the test controls every field and its order. */
import * as assert from 'uvu/assert'
import { createHash } from 'node:crypto'
import { GetObjectCommand, GetObjectTaggingCommand, HeadObjectCommand } from '@aws-sdk/client-s3'
import { createPresignedPost, type PresignedPostOptions } from '@aws-sdk/s3-presigned-post'
import { failure } from '../support/s3-failure.js'
import { createUser, issueKeys } from '../support/admin-client.js'
import { adminToken, s3, server, test, useS3Suite } from '../support/s3-suite.js'

const BUCKET = 'forms'

/** The cases that also run through a gateway (test/support/s3-suite.ts). */
useS3Suite(BUCKET, ['a form signed as createPresignedPost'])

interface FilePart {
  filename: string
  content: Buffer
}

const BOUNDARY = '----form-boundary-7MA4YWxkTrZu0gW'

/** A multipart/form-data body: the fields in order, then the file, then `after` (ignored by S3). */
function formBody(
  fields: Record<string, string>,
  file: FilePart | null,
  after: Record<string, string> = {},
): Buffer {
  const pieces: Buffer[] = []
  const field = (name: string, value: string): void => {
    pieces.push(
      Buffer.from(
        `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`,
      ),
    )
  }
  for (const [name, value] of Object.entries(fields)) field(name, value)
  if (file !== null) {
    pieces.push(
      Buffer.from(
        `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; ` +
          `filename="${file.filename}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
      ),
      file.content,
      Buffer.from('\r\n'),
    )
  }
  for (const [name, value] of Object.entries(after)) field(name, value)
  pieces.push(Buffer.from(`--${BOUNDARY}--\r\n`))
  return Buffer.concat(pieces)
}

async function post(url: string, body: Buffer): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
    body: new Uint8Array(body),
    redirect: 'manual',
  })
}

function presign(options: Omit<PresignedPostOptions, 'Bucket'>) {
  return createPresignedPost(s3, { Bucket: BUCKET, ...options })
}

function errorOf(xml: string): { code: string | undefined; message: string | undefined } {
  return {
    code: /<Code>([^<]*)<\/Code>/.exec(xml)?.[1],
    message: /<Message>([^<]*)<\/Message>/.exec(xml)?.[1],
  }
}

async function absent(key: string): Promise<boolean> {
  const head = await failure(() => s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key })))
  return head.status === 404
}

test('a form signed as createPresignedPost stores its file, ${filename} named; 204', async () => {
  const tagging =
    '<Tagging><TagSet><Tag><Key>from</Key><Value>form</Value></Tag></TagSet></Tagging>'
  const { url, fields } = await presign({
    Key: 'uploads/${filename}',
    Conditions: [['content-length-range', 1, 1024]],
    Fields: { 'Content-Type': 'text/plain', 'x-amz-meta-origin': 'browser', tagging },
  })
  const content = Buffer.from('hello from a web page')
  const answer = await post(url, formBody(fields, { filename: 'hello.txt', content }))
  assert.is(answer.status, 204, await answer.text())
  const md5 = createHash('md5').update(content).digest('hex')
  assert.is(answer.headers.get('etag'), `"${md5}"`)
  assert.ok(answer.headers.get('location')?.endsWith(`/${BUCKET}/uploads/hello.txt`))
  const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'uploads/hello.txt' }))
  assert.is(await got.Body!.transformToString(), content.toString())
  assert.is(got.ContentType, 'text/plain')
  assert.equal(got.Metadata, { origin: 'browser' })
  const tags = await s3.send(
    new GetObjectTaggingCommand({ Bucket: BUCKET, Key: 'uploads/hello.txt' }),
  )
  assert.equal(tags.TagSet, [{ Key: 'from', Value: 'form' }])
})

test('success_action_status 200 and 201, success_action_redirect 303', async () => {
  const content = Buffer.from('status')
  const ok200 = await presign({ Key: 's200', Fields: { success_action_status: '200' } })
  const answer200 = await post(ok200.url, formBody(ok200.fields, { filename: 'a', content }))
  assert.is(answer200.status, 200)
  assert.is(await answer200.text(), '')

  const ok201 = await presign({ Key: 's201', Fields: { success_action_status: '201' } })
  const answer201 = await post(ok201.url, formBody(ok201.fields, { filename: 'a', content }))
  assert.is(answer201.status, 201)
  const xml = await answer201.text()
  assert.match(xml, '<PostResponse>')
  assert.match(xml, `<Bucket>${BUCKET}</Bucket>`)
  assert.match(xml, '<Key>s201</Key>')
  assert.match(xml, `<Location>${server.url}/${BUCKET}/s201</Location>`)

  const target = 'https://example.invalid/done?from=form'
  const redirect = await presign({ Key: 's303', Fields: { success_action_redirect: target } })
  const answer303 = await post(redirect.url, formBody(redirect.fields, { filename: 'a', content }))
  assert.is(answer303.status, 303)
  const location = new URL(answer303.headers.get('location') ?? '')
  assert.is(location.origin + location.pathname, 'https://example.invalid/done')
  assert.is(location.searchParams.get('from'), 'form')
  assert.is(location.searchParams.get('bucket'), BUCKET)
  assert.is(location.searchParams.get('key'), 's303')
  assert.is(location.searchParams.get('etag'), answer303.headers.get('etag'))
  assert.not.ok(await absent('s303'))
})

test('a file of several chunks streams in whole; fields after the file are ignored', async () => {
  const content = Buffer.alloc(3 * 1024 * 1024 + 123)
  for (let i = 0; i < content.length; i += 4096) content.writeUInt32BE(i, i)
  const { url, fields } = await presign({ Key: 'big' })
  const answer = await post(url, formBody(fields, { filename: 'b', content }, { ignored: 'x' }))
  assert.is(answer.status, 204, await answer.text())
  const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'big' }))
  const bytes = Buffer.from(await got.Body!.transformToByteArray())
  assert.ok(bytes.equals(content))
})

test('refused: signature, expiry, conditions, extra fields, size; nothing stored', async () => {
  const content = Buffer.from('0123456789')
  const expect = async (
    form: Buffer,
    url: string,
    status: number,
    code: string,
    message?: string,
  ): Promise<void> => {
    const answer = await post(url, form)
    const error = errorOf(await answer.text())
    assert.is(answer.status, status, `${code}: ${error.code}: ${error.message}`)
    assert.is(error.code, code)
    if (message !== undefined) assert.is(error.message, message)
  }
  const signed = await presign({ Key: 'refused/sig' })
  const forged = { ...signed.fields, 'X-Amz-Signature': '0'.repeat(64) }
  await expect(
    formBody(forged, { filename: 'f', content }),
    signed.url,
    403,
    'SignatureDoesNotMatch',
  )

  const expired = await presign({ Key: 'refused/expired', Expires: -60 })
  const policyExpired = 'Invalid according to Policy: Policy expired.'
  await expect(
    formBody(expired.fields, { filename: 'f', content }),
    expired.url,
    403,
    'AccessDenied',
    policyExpired,
  )

  const prefixed = await presign({ Key: 'refused/${filename}' })
  const elsewhere = { ...prefixed.fields, key: 'other/f' }
  await expect(
    formBody(elsewhere, { filename: 'f', content }),
    prefixed.url,
    403,
    'AccessDenied',
    'Invalid according to Policy: Policy Condition failed: ["starts-with","$key","refused/"]',
  )

  const plain = await presign({ Key: 'refused/extra' })
  const extra = { ...plain.fields, 'x-amz-meta-sneaky': 'yes' }
  await expect(
    formBody(extra, { filename: 'f', content }),
    plain.url,
    403,
    'AccessDenied',
    'Invalid according to Policy: Extra input fields: x-amz-meta-sneaky',
  )

  const ranged = await presign({
    Key: 'refused/size',
    Conditions: [['content-length-range', 5, 8]],
  })
  const big = formBody(ranged.fields, { filename: 'f', content })
  await expect(big, ranged.url, 400, 'EntityTooLarge')
  const small = formBody(ranged.fields, { filename: 'f', content: Buffer.from('123') })
  await expect(small, ranged.url, 400, 'EntityTooSmall')

  const { policy: _policy, ...unsigned } = Object.fromEntries(
    Object.entries(plain.fields).map(([name, value]) => [name.toLowerCase(), value]),
  )
  await expect(formBody(unsigned, { filename: 'f', content }), plain.url, 403, 'AccessDenied')
  await expect(formBody(plain.fields, null), plain.url, 400, 'InvalidArgument')
  const nowhere = await createPresignedPost(s3, { Bucket: 'no-such-forms', Key: 'k' })
  await expect(
    formBody(nowhere.fields, { filename: 'f', content }),
    nowhere.url,
    404,
    'NoSuchBucket',
  )
  for (const key of ['refused/sig', 'refused/expired', 'other/f', 'refused/extra']) {
    assert.ok(await absent(key), key)
  }
  assert.ok(await absent('refused/size'))
})

test("a form's acl public-read needs the right to set ACLs: a SuperUser's is kept", async () => {
  const token = await adminToken()
  const userId = await createUser(server, token, 'form_writer', 'Writer')
  const keys = await issueKeys(server, token, userId)
  const writer = server.client({ accessKeyId: keys.access_key, secretAccessKey: keys.secret_key })
  const file = { filename: 'f.txt', content: Buffer.from('public form') }
  const signedBy = (client: typeof s3) =>
    createPresignedPost(client, {
      Bucket: BUCKET,
      Key: 'public-form',
      Fields: { acl: 'public-read' },
    })
  const refused = await signedBy(writer)
  const answer = await post(refused.url, formBody(refused.fields, file))
  assert.is(answer.status, 403, await answer.text())
  assert.ok(await absent('public-form'))
  const allowed = await signedBy(s3)
  const stored = await post(allowed.url, formBody(allowed.fields, file))
  assert.is(stored.status, 204, await stored.text())
  const anonymous = await fetch(`${server.url}/${BUCKET}/public-form`)
  assert.equal([anonymous.status, await anonymous.text()], [200, 'public form'])
  writer.destroy()
})

test.run()
