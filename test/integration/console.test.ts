/** @module Browser test of the web console's sessions and its Users, Cluster and Actors pages.
 * Goal: a person signs in with a username and password and does, through the pages, what the
 * admin API lets that user do, and no more: a wrong password opens nothing; a session is an
 * HttpOnly SameSite=Strict cookie, and a change without the page's CSRF token is refused; a
 * SuperUser creates a user and an S3 key whose secret works; a Reader is refused changes; the
 * Actors page follows the node live (its figures change under load without a reload) and shows a
 * chaos kill as a restart; signing out ends the session; the pages fetch nothing from elsewhere
 * and answer with a strict Content Security Policy.
 * Method: one real node (SVC_CHAOS=1, a root user), headless Chromium (test/support/
 * console-browser.ts), one browser context per user; S3 load and checks through the SDK. With
 * CONSOLE_SCREENSHOTS set to a folder, the pages are photographed there for the README. */
import { join } from 'node:path'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import {
  CreateBucketCommand,
  GetObjectCommand,
  ListBucketsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
} from '@aws-sdk/client-s3'
import type { Browser } from 'playwright-core'
import { admin, createUser, login } from '../support/admin-client.js'
import {
  closeBrowser,
  findChromium,
  launchBrowser,
  newConsoleUser,
  signIn,
  signedIn,
  skipWithoutChromium,
  type ConsoleUser,
} from '../support/console-browser.js'
import { clientFor, startServer, type TestServer } from '../support/server.js'
import { pollUntil } from '../support/wait.js'

const ROOT_PASSWORD = 'console-root-password'
/** Generous for a page's live feed (one event a second) on a loaded machine. */
const LIVE_WAIT_MS = 30_000

let server: TestServer
let browser: Browser | null = null
let root: ConsoleUser | null = null
const users: ConsoleUser[] = []
const shots = process.env['CONSOLE_SCREENSHOTS']

test.before(async () => {
  server = await startServer({ env: { SVC_ROOT_PASSWORD: ROOT_PASSWORD, SVC_CHAOS: '1' } })
  const executablePath = findChromium()
  if (executablePath !== undefined) browser = await launchBrowser(executablePath)
})

test.after(async () => {
  if (browser !== null) await closeBrowser(browser)
  await server.stop()
  server.cleanup()
})

/** The browser, or null after saying why the case cannot run here. */
function needBrowser(): Browser | null {
  if (browser !== null) return browser
  skipWithoutChromium()
  return null
}

async function rootUser(open: Browser): Promise<ConsoleUser> {
  root ??= await signedIn(open, server.url, 'root', ROOT_PASSWORD)
  if (!users.includes(root)) users.push(root)
  return root
}

async function screenshot(user: ConsoleUser, name: string): Promise<void> {
  if (shots === undefined) return
  await user.page.screenshot({ path: join(shots, `${name}.png`) })
}

test('a wrong password opens nothing; the right one opens it with a strict cookie', async () => {
  const open = needBrowser()
  if (open === null) return
  const user = await newConsoleUser(open, server.url)
  users.push(user)
  await signIn(user, server.url, 'root', 'not-the-password')
  assert.ok(user.page.url().endsWith('/console/login'), user.page.url())
  await user.page.getByRole('alert').getByText('Invalid username or password.').waitFor()
  assert.equal(await user.context.cookies(), [], 'no session cookie after a refusal')
  await screenshot(user, 'login')

  await signIn(user, server.url, 'root', ROOT_PASSWORD)
  await user.page.waitForURL(`${server.url}/console/buckets`)
  const [cookie] = await user.context.cookies()
  assert.is(cookie?.name, 'svc_console')
  assert.is(cookie?.httpOnly, true)
  assert.is(cookie?.sameSite, 'Strict')
  assert.is(cookie?.path, '/console')
  for (const name of ['Buckets', 'Users', 'Cluster', 'Actors']) {
    assert.ok(await user.page.getByRole('link', { name, exact: true }).isVisible(), name)
  }
  const page = await fetch(`${server.url}/console/buckets`, {
    headers: { cookie: `svc_console=${cookie?.value ?? ''}` },
  })
  const policy = page.headers.get('content-security-policy') ?? ''
  assert.match(policy, /default-src 'none'/)
  assert.match(policy, /script-src 'self'(;|$)/)
  assert.match(policy, /frame-ancestors 'none'/)
})

test('a change without the CSRF token is refused, and a sign-in from another site', async () => {
  const open = needBrowser()
  if (open === null) return
  const user = await rootUser(open)
  const [cookie] = await user.context.cookies()
  const headers = {
    cookie: `svc_console=${cookie?.value ?? ''}`,
    'content-type': 'application/json',
  }
  const body = JSON.stringify({
    username: 'csrf_victim',
    password: 'x-password',
    role: 'SuperUser',
  })
  const forged = await fetch(`${server.url}/console/api/admin/users`, {
    method: 'POST',
    headers,
    body,
  })
  assert.is(forged.status, 403)
  const bucket = await fetch(`${server.url}/console/s3/forged-bucket`, { method: 'PUT', headers })
  assert.is(bucket.status, 403)
  const token = await login(server, 'root', ROOT_PASSWORD)
  const list = await admin(server, 'GET', '/users', token)
  assert.not.ok(JSON.stringify(list.json).includes('csrf_victim'), 'no user was created')
  const s3 = server.client()
  const buckets = await s3.send(new ListBucketsCommand({}))
  assert.not.ok((buckets.Buckets ?? []).some((entry) => entry.Name === 'forged-bucket'))
  const crossSite = await fetch(`${server.url}/console/login`, {
    method: 'POST',
    headers: { origin: 'http://evil.example', 'content-type': 'application/x-www-form-urlencoded' },
    body: `username=root&password=${ROOT_PASSWORD}`,
    redirect: 'manual',
  })
  assert.is(crossSite.status, 403)
  assert.is(crossSite.headers.get('set-cookie'), null)
})

test('a SuperUser creates a user and an S3 key; the secret, shown once, works', async () => {
  const open = needBrowser()
  if (open === null) return
  const { page } = await rootUser(open)
  await page.getByRole('link', { name: 'Users', exact: true }).click()
  await page.getByLabel('New username').fill('console_reader')
  await page.getByLabel('New password').fill('console-reader-password')
  await page.getByLabel('Role', { exact: true }).selectOption('Reader')
  await page.getByRole('button', { name: 'Create user' }).click()
  const row = page.locator('tr[data-user="console_reader"]')
  await row.waitFor()
  assert.match(await row.innerText(), /Reader/)
  await row.getByRole('button', { name: 'Create key' }).click()
  const accessKey = await page.locator('[data-field="access-key"]').innerText()
  const secretKey = await page.locator('[data-field="secret-key"]').innerText()
  assert.match(accessKey, /^SVCAK/)
  assert.ok(secretKey.length >= 20)
  await screenshot(root!, 'users')
  const s3 = clientFor(server.url, { accessKeyId: accessKey, secretAccessKey: secretKey })
  const listed = await s3.send(new ListBucketsCommand({}))
  assert.ok(Array.isArray(listed.Buckets ?? []), 'the new key signs requests')
  await page.getByRole('button', { name: 'Done' }).click()
  await page.locator('[data-field="secret-key"]').waitFor({ state: 'detached' })
  // The secret is gone from the page for good: the admin API never shows it again.
  await page.reload()
  await row.waitFor()
  assert.not.ok((await page.content()).includes(secretKey))
})

test('a Reader sees but cannot change: the Users page and an S3 write are refused', async () => {
  const open = needBrowser()
  if (open === null) return
  const token = await login(server, 'root', ROOT_PASSWORD)
  await createUser(server, token, 'page_reader', 'Reader')
  await server.client().send(new CreateBucketCommand({ Bucket: 'reader-sees' }))
  const reader = await signedIn(open, server.url, 'page_reader', 'page_reader-password')
  users.push(reader)
  const { page } = reader
  await page.getByRole('link', { name: 'Users', exact: true }).click()
  await page
    .getByRole('alert')
    .getByText(/managed by SuperUsers/)
    .waitFor()
  assert.is(await page.getByRole('button', { name: 'Create user' }).count(), 0)
  // The page's own token, as its scripts send it: the role, not the token, refuses the change.
  const write = await page.evaluate(async () => {
    const csrf = document.querySelector<HTMLMetaElement>('meta[name="csrf-token"]')?.content ?? ''
    const response = await fetch('/console/s3/reader-sees/from-reader.txt', {
      method: 'PUT',
      headers: { 'x-csrf-token': csrf },
      body: 'nope',
    })
    return { status: response.status, text: await response.text() }
  })
  assert.is(write.status, 403)
  assert.match(write.text, /<Code>AccessDenied<\/Code>/)
  const read = await page.evaluate(async () => (await fetch('/console/s3/')).status)
  assert.is(read, 200, 'a Reader lists buckets')
  await page.getByRole('link', { name: 'Actors', exact: true }).click()
  await page.locator('tr[data-actor="iam"]').waitFor()
  assert.is(await page.getByRole('button', { name: /^Kill/ }).count(), 0, 'no kill for a Reader')
})

/** A figure of the Actors page's table, as shown. */
async function shown(user: ConsoleUser, actor: string, field: string): Promise<string> {
  return user.page.locator(`tr[data-actor="${actor}"] [data-field="${field}"]`).innerText()
}

test('the Actors page follows the node live under load, without a reload', async () => {
  const open = needBrowser()
  if (open === null) return
  const user = await rootUser(open)
  const { page } = user
  await page.getByRole('link', { name: 'Actors', exact: true }).click()
  await page.locator('tr[data-actor="iam"]').waitFor()
  // A mark on this document: a reload or a navigation would lose it.
  await page.evaluate(() => document.documentElement.setAttribute('data-loaded-once', '1'))
  const store = 'replica-store'
  const before = Number(await shown(user, store, 'messages'))
  const s3 = server.client()
  await s3.send(new CreateBucketCommand({ Bucket: 'live-load' }))
  for (let i = 0; i < 60; i += 1) {
    await s3.send(new PutObjectCommand({ Bucket: 'live-load', Key: `k${i}`, Body: `body ${i}` }))
  }
  const moved = await pollUntil(
    async () => Number(await shown(user, store, 'messages')) >= before + 60,
    LIVE_WAIT_MS,
    200,
  )
  assert.ok(
    moved,
    `the store's messages went from ${before} to ${await shown(user, store, 'messages')}`,
  )
  const chart = await page.locator('[data-chart="requests"] svg').getAttribute('aria-label')
  assert.match(chart ?? '', /peak [1-9]/, 'the requests chart shows the load')
  assert.is(
    await page.evaluate(() => document.documentElement.getAttribute('data-loaded-once')),
    '1',
  )
  assert.ok((await page.locator('svg.mesh circle[data-actor]').count()) >= 4, 'the mesh is drawn')
  await screenshot(user, 'actors')
})

test('a chaos kill from the Actors page shows as a restart', async () => {
  const open = needBrowser()
  if (open === null) return
  const user = await rootUser(open)
  const { page } = user
  await page.getByRole('link', { name: 'Actors', exact: true }).click()
  await page.locator('tr[data-actor="scrubber"]').waitFor()
  assert.is(await shown(user, 'scrubber', 'restarts'), '0')
  await page.getByRole('button', { name: 'Kill scrubber' }).click()
  await page.getByText('scrubber killed').waitFor()
  const restarted = await pollUntil(
    async () =>
      (await shown(user, 'scrubber', 'restarts')) === '1' &&
      (await shown(user, 'scrubber', 'state')) === 'up',
    LIVE_WAIT_MS,
    200,
  )
  assert.ok(restarted, `restarts ${await shown(user, 'scrubber', 'restarts')}`)
})

test('the Cluster page of a single node shows the node and its lifecycle passes', async () => {
  const open = needBrowser()
  if (open === null) return
  const user = await rootUser(open)
  const { page } = user
  await page.getByRole('link', { name: 'Cluster', exact: true }).click()
  await page.locator('[data-field="mode"]').waitFor()
  assert.is(await page.locator('[data-field="mode"]').innerText(), 'single')
  assert.match(await page.locator('[data-field="version"]').innerText(), /^\d+\.\d+\.\d+/)
  assert.match(await page.locator('[data-field="free"]').innerText(), / of /)
  // The lifecycle actor's passes, which a SuperUser sees.
  await page.locator('[data-repair="lifecycle"]').waitFor()
  assert.match(await page.locator('[data-repair="lifecycle"]').innerText(), /passes completed/)
  await screenshot(user, 'cluster')
})

test('the pages work at a phone’s width', async () => {
  const open = needBrowser()
  if (open === null) return
  const user = await rootUser(open)
  const { page } = user
  await page.setViewportSize({ width: 390, height: 844 })
  try {
    for (const name of ['Users', 'Actors', 'Cluster']) {
      await page.getByRole('link', { name, exact: true }).click()
      await page.waitForLoadState('domcontentloaded')
      await page.locator('main h2, main table, main .notice').first().waitFor()
      const overflow = await page.evaluate(
        () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
      )
      assert.ok(overflow <= 1, `${name} scrolls sideways by ${overflow} px`)
    }
  } finally {
    await page.setViewportSize({ width: 1280, height: 800 })
  }
})

test('signing out ends the session', async () => {
  const open = needBrowser()
  if (open === null) return
  const user = await rootUser(open)
  const { page } = user
  await page.getByRole('button', { name: 'Sign out' }).click()
  await page.waitForURL(`${server.url}/console/login`)
  assert.equal(await user.context.cookies(), [])
  await page.goto(`${server.url}/console/users`)
  assert.ok(page.url().endsWith('/console/login'))
  root = null
})

test('a bucket named console keeps working for S3 requests', async () => {
  const s3 = server.client()
  await s3.send(new CreateBucketCommand({ Bucket: 'console' }))
  for (const key of ['assets/console.css', 'login', 'api/live']) {
    await s3.send(new PutObjectCommand({ Bucket: 'console', Key: key, Body: `object ${key}` }))
    const got = await s3.send(new GetObjectCommand({ Bucket: 'console', Key: key }))
    assert.is(await got.Body?.transformToString(), `object ${key}`)
  }
  const listed = await s3.send(new ListObjectsV2Command({ Bucket: 'console' }))
  assert.is(listed.KeyCount, 3)
})

test('no page asked anything of another host, and no script failed', () => {
  if (browser === null) return
  for (const user of users) {
    assert.equal(user.offsite, [])
    assert.equal(user.pageErrors, [])
  }
})

test.run()
