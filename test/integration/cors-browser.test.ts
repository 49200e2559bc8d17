/** @module Browser test of bucket CORS. Goal: a real browser enforces our answers as it enforces
 * Amazon S3's: page code on another origin can PUT and GET an object through presigned URLs and
 * read its ETag and version id when the bucket (versioned) has a rule for that origin
 * (ExposeHeader ETag and x-amz-version-id), and its fetch is refused when the bucket has no rule.
 * Method: the real server, a page served by a small HTTP server on another loopback port (another
 * port is another origin), and headless Chromium (Debian's `chromium`, installed by .ci/test-deps)
 * driven by playwright-core through `executablePath`. CI requires Chromium; elsewhere, without it,
 * the check says so and is not run. */
import { createServer, type Server } from 'node:http'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import {
  CreateBucketCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutBucketCorsCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3'
import { getSignedUrl } from '@aws-sdk/s3-request-presigner'
import { type Page, type Response as SeenResponse } from 'playwright-core'
import {
  BROWSER_TIMEOUT_MS,
  closeBrowser,
  findChromium,
  skipWithoutChromium,
  launchBrowser,
} from '../support/console-browser.js'
import { startServer, type TestServer } from '../support/server.js'

const PAGE = '<!doctype html><meta charset="utf-8"><title>CORS test page</title><p>page</p>'

let server: TestServer
let s3: S3Client
let page: Server
let pageOrigin = ''

/** Serves the one page the browser opens, on a free loopback port: its own origin. */
function startPage(): Promise<Server> {
  const created = createServer((request, response) => {
    response.writeHead(request.url === '/' ? 200 : 404, { 'content-type': 'text/html' })
    response.end(request.url === '/' ? PAGE : '')
  })
  return new Promise((resolve, reject) => {
    created.once('error', reject)
    created.listen(0, '127.0.0.1', () => resolve(created))
  })
}

test.before(async () => {
  server = await startServer()
  s3 = server.client()
  page = await startPage()
  const address = page.address()
  assert.ok(typeof address === 'object' && address !== null)
  pageOrigin = `http://127.0.0.1:${address.port}`
  assert.is.not(pageOrigin, server.url, 'the page is on another origin than the store')
  for (const bucket of ['with-rule', 'without-rule']) {
    await s3.send(new CreateBucketCommand({ Bucket: bucket }))
  }
  const rule = {
    AllowedOrigins: [pageOrigin],
    AllowedMethods: ['GET', 'PUT'],
    AllowedHeaders: ['*'],
    ExposeHeaders: ['ETag', 'x-amz-version-id'],
  }
  await s3.send(
    new PutBucketCorsCommand({ Bucket: 'with-rule', CORSConfiguration: { CORSRules: [rule] } }),
  )
  await s3.send(
    new PutBucketVersioningCommand({
      Bucket: 'with-rule',
      VersioningConfiguration: { Status: 'Enabled' },
    }),
  )
})

test.after(async () => {
  await new Promise((resolve) => page.close(resolve))
  await server.stop()
  server.cleanup()
})

interface FetchOutcome {
  status?: number
  etag?: string | null
  versionId?: string | null
  text?: string
  error?: string
}

/** What page code sees of a PUT then a GET of one object, each by its presigned URL. */
function putThenGet(browserPage: Page, urls: { put: string; get: string }) {
  return browserPage.evaluate(async ({ put, get }) => {
    const outcome = async (request: Promise<Response>): Promise<FetchOutcome> => {
      try {
        const response = await request
        return {
          status: response.status,
          etag: response.headers.get('etag'),
          versionId: response.headers.get('x-amz-version-id'),
          text: await response.text(),
        }
      } catch (error) {
        return { error: String(error) }
      }
    }
    const timeout = { signal: AbortSignal.timeout(20_000) }
    const putOutcome = await outcome(
      fetch(put, { method: 'PUT', body: 'from the page', ...timeout }),
    )
    const getOutcome = await outcome(fetch(get, timeout))
    return { put: putOutcome, get: getOutcome }
  }, urls)
}

async function presigned(bucket: string, key: string): Promise<{ put: string; get: string }> {
  const put = await getSignedUrl(s3, new PutObjectCommand({ Bucket: bucket, Key: key }), {
    expiresIn: 300,
  })
  const get = await getSignedUrl(s3, new GetObjectCommand({ Bucket: bucket, Key: key }), {
    expiresIn: 300,
  })
  return { put, get }
}

test('a page on another origin reads ETag with the rule and is refused without it', async () => {
  const executablePath = findChromium()
  if (executablePath === undefined) {
    skipWithoutChromium()
    return
  }
  const browser = await launchBrowser(executablePath)
  try {
    const browserPage = await browser.newPage()
    browserPage.setDefaultTimeout(BROWSER_TIMEOUT_MS)
    const responses: SeenResponse[] = []
    browserPage.on('response', (response) => responses.push(response))
    await browserPage.goto(`${pageOrigin}/`)

    const allowed = await putThenGet(browserPage, await presigned('with-rule', 'from-page.txt'))
    assert.is(allowed.put.error, undefined, 'the PUT is allowed')
    assert.is(allowed.put.status, 200)
    assert.match(allowed.put.etag ?? '', /^"[0-9a-f]{32}"$/)
    // The bucket has versioning: page code reads the new version's id through the exposed header.
    assert.match(allowed.put.versionId ?? '', /^[0-9a-f]{24}$/)
    assert.is(allowed.get.status, 200)
    assert.is(allowed.get.text, 'from the page')
    assert.is(allowed.get.etag, allowed.put.etag)
    const stored = await s3.send(
      new GetObjectCommand({ Bucket: 'with-rule', Key: 'from-page.txt' }),
    )
    assert.is(await stored.Body?.transformToString(), 'from the page')
    const put = responses.find((response) => response.request().method() === 'PUT')
    assert.ok(put !== undefined, 'the browser saw the PUT response')
    const headers = await put.allHeaders()
    assert.is(headers['access-control-allow-origin'], pageOrigin)
    const exposed = (headers['access-control-expose-headers'] ?? '').split(/,\s*/)
    assert.equal(exposed, ['ETag', 'x-amz-version-id'])

    const refused = await putThenGet(browserPage, await presigned('without-rule', 'from-page.txt'))
    assert.match(refused.put.error ?? '', /TypeError: Failed to fetch/)
    assert.match(refused.get.error ?? '', /TypeError: Failed to fetch/)
    // The preflight was refused, so the PUT itself never reached the store.
    const absent = await s3
      .send(new HeadObjectCommand({ Bucket: 'without-rule', Key: 'from-page.txt' }))
      .then(() => 'found')
      .catch((error: unknown) => (error as { name: string }).name)
    assert.is(absent, 'NotFound')
  } finally {
    await closeBrowser(browser)
  }
})

test.run()
