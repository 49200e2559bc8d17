/** @module Browser test of the web console's Buckets and Objects pages. Goal: through the pages
 * alone, a user creates a bucket, uploads files (one small, one large enough to go as a multipart
 * upload) and downloads the same bytes, walks folders by their breadcrumb, pages through a listing
 * longer than a page, sets versioning and CORS rules through forms (the S3 API reads back what was
 * set), opens the bucket to requests without credentials by a policy and an ACL set through forms,
 * tags an object and sees its versions, and makes a share link that works in a browser with no
 * session; a Reader sees the objects but has no control that changes, and the API refuses the
 * change its page could still send. Method: one real node with a root user, headless Chromium
 * (test/support/console-browser.ts), the SDK to check what the store holds. With
 * CONSOLE_SCREENSHOTS set to a folder, the Buckets and Objects pages are photographed there for the
 * README. */
import { createHash, randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetBucketCorsCommand,
  GetBucketLifecycleConfigurationCommand,
  GetBucketPolicyCommand,
  GetBucketVersioningCommand,
  GetObjectCommand,
  GetObjectLegalHoldCommand,
  GetObjectLockConfigurationCommand,
  GetObjectTaggingCommand,
  HeadObjectCommand,
  PutObjectCommand,
} from '@aws-sdk/client-s3'
import type { Browser } from 'playwright-core'
import { admin, createUser, issueKeys, login } from '../support/admin-client.js'
import {
  closeBrowser,
  findChromium,
  launchBrowser,
  newConsoleUser,
  signedIn,
  skipWithoutChromium,
  type ConsoleUser,
} from '../support/console-browser.js'
import { startServer, type TestServer } from '../support/server.js'

const ROOT_PASSWORD = 'console-objects-root-password'
const BUCKET = 'photos'
/** Above the pages' multipart threshold (16 MiB): three parts of 8 MiB. */
const LARGE_BYTES = 20 * 1024 * 1024

let server: TestServer
let browser: Browser | null = null
let root: ConsoleUser
const users: ConsoleUser[] = []
const files = mkdtempSync(join(tmpdir(), 'console-objects-'))
const shots = process.env['CONSOLE_SCREENSHOTS']

test.before(async () => {
  server = await startServer({ env: { SVC_ROOT_PASSWORD: ROOT_PASSWORD } })
  const executablePath = findChromium()
  if (executablePath === undefined) return
  browser = await launchBrowser(executablePath)
  root = await signedIn(browser, server.url, 'root', ROOT_PASSWORD)
  users.push(root)
})

test.after(async () => {
  if (browser !== null) await closeBrowser(browser)
  await server.stop()
  server.cleanup()
  rmSync(files, { recursive: true, force: true })
})

function needBrowser(): Browser | null {
  if (browser !== null) return browser
  skipWithoutChromium()
  return null
}

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex')
}

async function openBucket(user: ConsoleUser, prefix = ''): Promise<void> {
  const query = prefix === '' ? '' : `?prefix=${encodeURIComponent(prefix)}`
  await user.page.goto(`${server.url}/console/buckets/${BUCKET}${query}`)
  await user.page.locator('table caption').waitFor()
}

test('a bucket created through the form is listed, and opens', async () => {
  if (needBrowser() === null) return
  const { page } = root
  await page.getByLabel('Bucket name').fill(BUCKET)
  await page.getByRole('button', { name: 'Create bucket' }).click()
  await page.locator(`tr[data-bucket="${BUCKET}"]`).waitFor()
  assert.match(await page.locator(`tr[data-bucket="${BUCKET}"]`).innerText(), /0\s+0 B/)
  await page.getByRole('link', { name: BUCKET, exact: true }).click()
  await page.waitForURL(`${server.url}/console/buckets/${BUCKET}`)
})

test('a small and a large (multipart) upload, and a download of the same bytes', async () => {
  if (needBrowser() === null) return
  const { page } = root
  await openBucket(root)
  const small = randomBytes(100_000)
  const large = randomBytes(LARGE_BYTES)
  writeFileSync(join(files, 'small.bin'), small)
  writeFileSync(join(files, 'large.bin'), large)
  await page.getByLabel('Upload files').setInputFiles([join(files, 'small.bin')])
  await page.locator('tr[data-key="small.bin"]').waitFor()
  await page.getByLabel('Upload files').setInputFiles([join(files, 'large.bin')])
  await page.locator('tr[data-key="large.bin"]').waitFor()

  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.getByRole('link', { name: 'Download small.bin' }).click(),
  ])
  const path = await download.path()
  assert.is(sha256(readFileSync(path)), sha256(small), 'the download is the bytes uploaded')

  const s3 = server.client()
  const stored = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'large.bin' }))
  assert.is(sha256(await stored.Body!.transformToByteArray()), sha256(large))
  assert.match(stored.ETag ?? '', /-3"$/, 'the large file went as three parts')
})

test('folders with a breadcrumb, and paging through a long listing', async () => {
  if (needBrowser() === null) return
  const s3 = server.client()
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'a/b/deep.txt', Body: 'deep' }))
  const puts = Array.from({ length: 120 }, (_, i) =>
    s3.send(
      new PutObjectCommand({
        Bucket: BUCKET,
        Key: `many/k${String(i).padStart(3, '0')}`,
        Body: '',
      }),
    ),
  )
  await Promise.all(puts)
  const { page } = root
  await openBucket(root)
  await page.getByRole('link', { name: 'a/', exact: true }).click()
  await page.getByRole('link', { name: 'b/', exact: true }).click()
  await page.locator('tr[data-key="a/b/deep.txt"]').waitFor()
  const crumbs = page.getByRole('navigation', { name: 'Breadcrumb' })
  assert.equal(await crumbs.getByRole('link').allInnerTexts(), ['Buckets', BUCKET, 'a', 'b'])
  await crumbs.getByRole('link', { name: 'a', exact: true }).click()
  await page.locator('tr[data-folder="a/b/"]').waitFor()

  await openBucket(root, 'many/')
  assert.is(await page.locator('tr[data-key]').count(), 100)
  await page.getByRole('button', { name: 'Next page' }).click()
  await page.locator('tr[data-key="many/k119"]').waitFor()
  assert.is(await page.locator('tr[data-key]').count(), 20)
  await page.getByRole('button', { name: 'Previous page' }).click()
  await page.locator('tr[data-key="many/k000"]').waitFor()
  await page.setViewportSize({ width: 390, height: 844 })
  const overflow = await page.evaluate(
    () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
  )
  await page.setViewportSize({ width: 1280, height: 800 })
  assert.ok(overflow <= 1, `the objects page scrolls sideways by ${overflow} px at 390 px`)
})

test('versioning and CORS rules set through forms are what S3 reads back', async () => {
  if (needBrowser() === null) return
  const { page } = root
  await openBucket(root)
  await page.getByLabel('Versioning', { exact: true }).selectOption('Enabled')
  await page.getByRole('button', { name: 'Save versioning' }).click()
  await page.getByText('Versioning is Enabled.').waitFor()
  await page.getByRole('button', { name: 'Add rule' }).click()
  await page.getByLabel('Allowed origins, rule 1').fill('https://app.example.com')
  await page.getByLabel('Allowed methods, rule 1').fill('GET, PUT')
  await page.getByLabel('Expose headers, rule 1').fill('ETag')
  await page.getByLabel('Max age (seconds), rule 1').fill('600')
  await page.getByRole('button', { name: 'Save CORS rules' }).click()
  await page.getByText('CORS rules saved.').waitFor()
  const s3 = server.client()
  const versioning = await s3.send(new GetBucketVersioningCommand({ Bucket: BUCKET }))
  assert.is(versioning.Status, 'Enabled')
  const cors = await s3.send(new GetBucketCorsCommand({ Bucket: BUCKET }))
  assert.equal(cors.CORSRules?.[0]?.AllowedOrigins, ['https://app.example.com'])
  assert.equal(cors.CORSRules?.[0]?.AllowedMethods, ['GET', 'PUT'])
  assert.equal(cors.CORSRules?.[0]?.ExposeHeaders, ['ETag'])
  assert.is(cors.CORSRules?.[0]?.MaxAgeSeconds, 600)
})

test('a policy and an ACL set through forms open the bucket to unsigned requests', async () => {
  if (needBrowser() === null) return
  const { page } = root
  const s3 = server.client()
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'public/poster.txt', Body: 'poster' }))
  const anonymous = async (path: string): Promise<number> => (await fetch(server.url + path)).status
  assert.is(await anonymous(`/${BUCKET}/public/poster.txt`), 403)
  await openBucket(root)
  await page.getByText('This bucket has no policy.').waitFor()
  await page.getByRole('button', { name: 'Public-read example' }).click()
  await page.getByRole('button', { name: 'Save policy' }).click()
  await page.getByText('Bucket policy saved.').waitFor()
  await page.getByText('This policy makes the bucket public').waitFor()
  const saved = await s3.send(new GetBucketPolicyCommand({ Bucket: BUCKET }))
  assert.match(saved.Policy ?? '', `arn:aws:s3:::${BUCKET}/*`)
  // One ingress thread: the policy's put dropped what the thread had read of the old one.
  assert.is(await anonymous(`/${BUCKET}/public/poster.txt`), 200)
  assert.is(await anonymous(`/${BUCKET}?list-type=2`), 403)
  await page.getByLabel('Access list (ACL)').selectOption('public-read')
  await page.getByRole('button', { name: 'Save ACL' }).click()
  await page.getByText("The bucket's ACL is public-read.").waitFor()
  assert.is(await anonymous(`/${BUCKET}?list-type=2`), 200)
  await page.getByLabel('Access list (ACL)').selectOption('private')
  await page.getByRole('button', { name: 'Save ACL' }).click()
  await page.getByText("The bucket's ACL is private.").waitFor()
  page.once('dialog', (dialog) => void dialog.accept())
  await page.getByRole('button', { name: 'Remove policy' }).click()
  await page.getByText('Bucket policy removed.').waitFor()
  assert.is(await anonymous(`/${BUCKET}/public/poster.txt`), 403)
  assert.is(await anonymous(`/${BUCKET}?list-type=2`), 403)
})

test('a quota set through the form is what the admin API reads back', async () => {
  if (needBrowser() === null) return
  const { page } = root
  await openBucket(root)
  await page.getByLabel('Maximum size (MiB)').fill('1.5')
  await page.getByLabel('Maximum objects').fill('1000')
  await page.getByRole('button', { name: 'Save quota' }).click()
  await page.getByText('Quota saved.').waitFor()
  const token = await login(server, 'root', ROOT_PASSWORD)
  const read = await admin(server, 'GET', `/buckets/${BUCKET}/quota`, token)
  assert.equal(
    [read.json].map((view) => {
      const { max_size_bytes: bytes, max_objects: objects } = view as Record<string, unknown>
      return [bytes, objects]
    }),
    [[1.5 * 1024 * 1024, 1000]],
  )
  await page.getByLabel('Maximum size (MiB)').fill('')
  await page.getByLabel('Maximum objects').fill('')
  await page.getByRole('button', { name: 'Save quota' }).click()
  await page.getByText('Quota saved.').waitFor()
  const cleared = await admin(server, 'GET', `/buckets/${BUCKET}/quota`, token)
  assert.is((cleared.json as { max_objects: unknown }).max_objects, null)
})

test('lifecycle rules set through the form are what S3 reads back', async () => {
  if (needBrowser() === null) return
  const { page } = root
  await openBucket(root)
  await page.getByRole('button', { name: 'Add lifecycle rule' }).click()
  await page.getByLabel('Rule ID, rule 1').fill('scratch')
  await page.getByLabel('Prefix, rule 1').fill('scratch/')
  await page.getByLabel('Expire objects after (days), rule 1').fill('7')
  await page.getByLabel('Abort incomplete uploads after (days), rule 1').fill('2')
  await page.getByRole('button', { name: 'Save lifecycle rules' }).click()
  await page.getByText('Lifecycle rules saved.').waitFor()
  const read = await server
    .client()
    .send(new GetBucketLifecycleConfigurationCommand({ Bucket: BUCKET }))
  assert.equal(read.Rules, [
    {
      ID: 'scratch',
      Filter: { Prefix: 'scratch/' },
      Status: 'Enabled',
      Expiration: { Days: 7 },
      AbortIncompleteMultipartUpload: { DaysAfterInitiation: 2 },
    },
  ])
  await page.getByRole('button', { name: 'Remove lifecycle rule 1' }).click()
  await page.getByRole('button', { name: 'Save lifecycle rules' }).click()
  await page.getByText('Lifecycle rules saved.').waitFor()
  const gone = await server
    .client()
    .send(new GetBucketLifecycleConfigurationCommand({ Bucket: BUCKET }))
    .then(
      () => 'kept',
      (error: Error) => error.name,
    )
  assert.is(gone, 'NoSuchLifecycleConfiguration')
})

test('object lock: a default retention, and an object held, through the forms', async () => {
  if (needBrowser() === null) return
  const { page } = root
  const s3 = server.client()
  await s3.send(new CreateBucketCommand({ Bucket: 'vault', ObjectLockEnabledForBucket: true }))
  const put = await s3.send(new PutObjectCommand({ Bucket: 'vault', Key: 'deed', Body: 'deed' }))
  await page.goto(`${server.url}/console/buckets/vault`)
  await page.locator('tr[data-key="deed"]').waitFor()
  await page.getByLabel('Default retention').selectOption('GOVERNANCE')
  await page.getByLabel('Days', { exact: true }).fill('3')
  await page.getByRole('button', { name: 'Save default retention' }).click()
  await page.getByText('Default retention saved.').waitFor()
  const config = await s3.send(new GetObjectLockConfigurationCommand({ Bucket: 'vault' }))
  assert.equal(config.ObjectLockConfiguration?.Rule?.DefaultRetention, {
    Mode: 'GOVERNANCE',
    Days: 3,
  })
  await page.getByRole('button', { name: 'Details of deed' }).click()
  await page.getByRole('checkbox', { name: 'Legal hold' }).check()
  await page.getByRole('button', { name: 'Save legal hold' }).click()
  await page.getByText('Legal hold on.').waitFor()
  const held = await s3.send(new GetObjectLegalHoldCommand({ Bucket: 'vault', Key: 'deed' }))
  assert.is(held.LegalHold?.Status, 'ON')
  const refused = await s3
    .send(new DeleteObjectCommand({ Bucket: 'vault', Key: 'deed', VersionId: put.VersionId }))
    .then(
      () => 'deleted',
      (error: Error) => error.name,
    )
  assert.is(refused, 'AccessDenied')
})

test("an object's ACL set to public-read in its details lets anyone download it", async () => {
  if (needBrowser() === null) return
  const { page } = root
  await server.client().send(new PutObjectCommand({ Bucket: BUCKET, Key: 'flyer.txt', Body: 'f' }))
  assert.is((await fetch(`${server.url}/${BUCKET}/flyer.txt`)).status, 403)
  await openBucket(root)
  await page.getByRole('button', { name: 'Details of flyer.txt' }).click()
  await page.getByLabel('Object access list (ACL)').selectOption('public-read')
  await page.getByRole('button', { name: 'Save object ACL' }).click()
  await page.getByText("The object's ACL is public-read.").waitFor()
  const anonymous = await fetch(`${server.url}/${BUCKET}/flyer.txt`)
  assert.equal([anonymous.status, await anonymous.text()], [200, 'f'])
})

test('details: tags saved, versions listed, a share link that needs no session', async () => {
  const open = needBrowser()
  if (open === null) return
  const token = await login(server, 'root', ROOT_PASSWORD)
  const listed = await admin(server, 'GET', '/users', token)
  const rootId = (listed.json as { id: string; username: string }[]).find(
    (user) => user.username === 'root',
  )!.id
  await issueKeys(server, token, rootId)
  const s3 = server.client()
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'shared.txt', Body: 'version one' }))
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'shared.txt', Body: 'version two' }))
  const { page } = root
  await openBucket(root)
  await page.getByRole('button', { name: 'Details of shared.txt' }).click()
  await page.locator('#details tr[data-version]').nth(1).waitFor()
  assert.is(await page.locator('#details tr[data-version]').count(), 2)
  await page.getByLabel('Tags, one name=value a line').fill('team=web\nstage=beta')
  await page.getByRole('button', { name: 'Save tags' }).click()
  await page.getByText('Tags of shared.txt saved.').waitFor()
  const tags = await s3.send(new GetObjectTaggingCommand({ Bucket: BUCKET, Key: 'shared.txt' }))
  assert.equal((tags.TagSet ?? []).map((tag) => `${tag.Key}=${tag.Value}`).sort(), [
    'stage=beta',
    'team=web',
  ])
  await page.getByLabel('Link lifetime').selectOption({ label: '1 hour' })
  await page.getByRole('button', { name: 'Create link' }).click()
  await page.getByText(/The link works until/).waitFor()
  const link = await page.getByLabel('Share link', { exact: true }).inputValue()
  assert.match(link, /X-Amz-Signature=/)
  if (shots !== undefined) {
    await page.evaluate(() => window.scrollTo(0, 0))
    await page.screenshot({ path: join(shots, 'objects.png') })
  }
  const stranger = await newConsoleUser(open, server.url)
  try {
    // The object has no type a browser shows: opening the link downloads it.
    const [download] = await Promise.all([
      stranger.page.waitForEvent('download'),
      stranger.page.goto(link).catch(() => null),
    ])
    assert.is(readFileSync(await download.path()).toString(), 'version two')
    assert.equal(await stranger.context.cookies(), [], 'no session was needed')
  } finally {
    await stranger.context.close()
  }
})

test('a Reader sees objects, has no control that changes, is refused a change', async () => {
  const open = needBrowser()
  if (open === null) return
  const token = await login(server, 'root', ROOT_PASSWORD)
  await createUser(server, token, 'objects_reader', 'Reader')
  const reader = await signedIn(open, server.url, 'objects_reader', 'objects_reader-password')
  users.push(reader)
  await openBucket(reader)
  await reader.page.locator('tr[data-key="small.bin"]').waitFor()
  for (const name of ['Upload files', 'Delete small.bin']) {
    assert.is(await reader.page.getByLabel(name).count(), 0, `no ${name} for a Reader`)
  }
  await reader.page.getByText('Bucket policy').first().waitFor()
  for (const name of ['Save policy', 'Save ACL', 'Save quota']) {
    assert.is(await reader.page.getByRole('button', { name }).count(), 0, `no ${name} for a Reader`)
  }
  await reader.page.goto(`${server.url}/console/buckets`)
  // S3 lists a user's own buckets: another's opens by its name.
  await reader.page.getByLabel('Open bucket by name').fill(BUCKET)
  await reader.page.getByRole('button', { name: 'Open', exact: true }).click()
  await reader.page.locator('tr[data-key="small.bin"]').waitFor()
  await reader.page.goto(`${server.url}/console/buckets`)
  await reader.page.getByLabel('Open bucket by name').waitFor()
  assert.is(await reader.page.getByRole('button', { name: 'Create bucket' }).count(), 0)
  const refused = await reader.page.evaluate(async (bucket) => {
    const csrf = document.querySelector<HTMLMetaElement>('meta[name="csrf-token"]')?.content ?? ''
    const response = await fetch(`/console/s3/${bucket}/small.bin`, {
      method: 'DELETE',
      headers: { 'x-csrf-token': csrf },
    })
    return response.status
  }, BUCKET)
  assert.is(refused, 403)
  const head = await server
    .client()
    .send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'small.bin' }))
  assert.is(head.ContentLength, 100_000, 'the object is still there')
})

test('a bucket with objects is not deleted, and says why', async () => {
  if (needBrowser() === null) return
  const { page } = root
  await page.goto(`${server.url}/console/buckets`)
  if (shots !== undefined) {
    await page.locator(`tr[data-bucket="${BUCKET}"]`).waitFor()
    await page.screenshot({ path: join(shots, 'buckets.png') })
  }
  page.once('dialog', (dialog) => void dialog.accept())
  await page.getByRole('button', { name: `Delete bucket ${BUCKET}` }).click()
  await page
    .getByRole('status')
    .getByText(/not empty/i)
    .waitFor()
  assert.is(await page.locator(`tr[data-bucket="${BUCKET}"]`).count(), 1)
})

test('no page asked anything of another host, and no script failed', () => {
  if (browser === null) return
  for (const user of users) {
    assert.equal(user.offsite, [])
    assert.equal(user.pageErrors, [])
  }
})

test.run()
