/** Goal: listings of a large bucket are exact: every key once, in byte order, pages chained by
 * continuation tokens and markers, common prefixes rolled up per delimiter and counted against
 * max-keys, as Amazon S3 does for ListObjectsV2 and ListObjects (v1). Method: the real server as a
 * child process; 5,000 keys `dir-<i%20>/sub-<(i/20)%10>/file-<i>` (10 subdirectories of 25 files
 * in each of 20 directories) written with @aws-sdk/client-s3 at a bounded concurrency of 64, then
 * listed page by page and compared with the expected list computed here. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { Agent } from 'node:http'
import {
  CreateBucketCommand,
  ListObjectsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type _Object,
  type CommonPrefix,
  type ListObjectsV2CommandOutput,
} from '@aws-sdk/client-s3'
import { ACCESS_KEY, SECRET_KEY, startServer, type TestServer } from '../support/server.js'

const BUCKET = 'listing'
const KEYS = 5_000
const DIRS = 20
const SUBS = 10
const CONCURRENCY = 64

let server: TestServer
let s3: S3Client

/** The i-th key: i%20 picks the directory, (i/20)%10 the subdirectory, so that every directory
 * holds all 10 subdirectories (with `i%10` a directory would hold only one). */
function keyOf(i: number): string {
  return `dir-${i % DIRS}/sub-${Math.floor(i / DIRS) % SUBS}/file-${i}`
}

function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'))
}

const ALL_KEYS = Array.from({ length: KEYS }, (_, i) => keyOf(i)).sort(byteOrder)

async function putAll(): Promise<void> {
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < KEYS) {
      const i = next++
      await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: keyOf(i), Body: `${i}` }))
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, worker))
}

test.before(async () => {
  server = await startServer()
  s3 = new S3Client({
    endpoint: server.url,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY },
    maxAttempts: 1,
    // Listing is under test, not upload checksums: skipping CRC32 trims the client's CPU per PUT.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    requestHandler: { httpAgent: new Agent({ keepAlive: true, maxSockets: CONCURRENCY }) },
  })
  await s3.send(new CreateBucketCommand({ Bucket: BUCKET }))
  await putAll()
})

test.after(async () => {
  s3.destroy()
  await server.stop()
  server.cleanup()
})

function keysOf(page: { Contents?: _Object[] | undefined }): string[] {
  return (page.Contents ?? []).map((entry) => entry.Key ?? '')
}

function prefixesOf(page: { CommonPrefixes?: CommonPrefix[] | undefined }): string[] {
  return (page.CommonPrefixes ?? []).map((entry) => entry.Prefix ?? '')
}

interface V2Query {
  Prefix?: string
  Delimiter?: string
  StartAfter?: string
  MaxKeys: number
}

/** Follows NextContinuationToken to the end, checking each page's own bookkeeping. */
async function listAllV2(query: V2Query, pagesMax: number): Promise<ListObjectsV2CommandOutput[]> {
  const pages: ListObjectsV2CommandOutput[] = []
  let token: string | undefined
  do {
    assert.ok(pages.length < pagesMax, `more than ${pagesMax} pages`)
    const page = await s3.send(
      new ListObjectsV2Command({
        Bucket: BUCKET,
        ...query,
        ...(token === undefined ? {} : { ContinuationToken: token }),
      }),
    )
    const count = keysOf(page).length + prefixesOf(page).length
    assert.is(page.KeyCount, count, `KeyCount of page ${pages.length}`)
    assert.is(page.MaxKeys, query.MaxKeys)
    assert.is(page.ContinuationToken, token)
    if (page.IsTruncated === true) {
      assert.is(count, query.MaxKeys, `a truncated page is full (page ${pages.length})`)
      assert.type(page.NextContinuationToken, 'string')
      assert.is.not(page.NextContinuationToken, token)
    } else {
      assert.is(page.IsTruncated, false)
      assert.is(page.NextContinuationToken, undefined)
    }
    pages.push(page)
    token = page.IsTruncated === true ? page.NextContinuationToken : undefined
  } while (token !== undefined)
  return pages
}

test('ListObjectsV2 in pages of 1000: every key once, in byte order, tokens chained', async () => {
  const pages = await listAllV2({ MaxKeys: 1000 }, KEYS / 1000 + 1)
  assert.is(pages.length, KEYS / 1000)
  pages.forEach((page, index) => {
    assert.is(page.KeyCount, 1000, `page ${index}`)
    assert.is(page.IsTruncated, index < pages.length - 1, `IsTruncated of page ${index}`)
    assert.equal(prefixesOf(page), [])
  })
  const listed = pages.flatMap(keysOf)
  assert.is(listed.length, KEYS)
  assert.is(new Set(listed).size, KEYS)
  assert.equal(listed, ALL_KEYS)
  // Sizes and ETags come from the stored objects: spot-check one.
  const first = pages[0]?.Contents?.[0]
  assert.is(first?.Key, 'dir-0/sub-0/file-0')
  assert.is(first?.Size, 1)
})

test('delimiter / at the top rolls everything up into the 20 directories', async () => {
  const pages = await listAllV2({ Delimiter: '/', MaxKeys: 1000 }, 1)
  const page = pages[0]
  assert.ok(page)
  assert.equal(keysOf(page), [])
  const expected = Array.from({ length: DIRS }, (_, d) => `dir-${d}/`).sort(byteOrder)
  assert.equal(prefixesOf(page), expected)
  assert.is(page.KeyCount, DIRS)
  assert.is(page.Delimiter, '/')
})

test('common prefixes count against max-keys and page like keys', async () => {
  const pages = await listAllV2({ Delimiter: '/', MaxKeys: 7 }, 4)
  assert.equal(
    pages.map((page) => prefixesOf(page).length),
    [7, 7, 6],
  )
  const expected = Array.from({ length: DIRS }, (_, d) => `dir-${d}/`).sort(byteOrder)
  assert.equal(pages.flatMap(prefixesOf), expected)
})

test('prefix dir-3/ with delimiter / gives its 10 subdirectories', async () => {
  const pages = await listAllV2({ Prefix: 'dir-3/', Delimiter: '/', MaxKeys: 1000 }, 1)
  const page = pages[0]
  assert.ok(page)
  assert.equal(keysOf(page), [])
  const expected = Array.from({ length: SUBS }, (_, s) => `dir-3/sub-${s}/`)
  assert.equal(prefixesOf(page), expected)
  assert.is(page.Prefix, 'dir-3/')
})

test('prefix dir-3/sub-4/ in pages of 10: all 25 files once, in order', async () => {
  const prefix = 'dir-3/sub-4/'
  const pages = await listAllV2({ Prefix: prefix, Delimiter: '/', MaxKeys: 10 }, 4)
  assert.equal(
    pages.map((page) => page.KeyCount),
    [10, 10, 5],
  )
  const expected = ALL_KEYS.filter((key) => key.startsWith(prefix))
  assert.is(expected.length, KEYS / DIRS / SUBS)
  assert.equal(pages.flatMap(keysOf), expected)
  assert.equal(pages.flatMap(prefixesOf), [])
})

test('start-after in the middle begins right after it', async () => {
  const middle = ALL_KEYS[KEYS / 2] ?? ''
  const page = await s3.send(
    new ListObjectsV2Command({ Bucket: BUCKET, StartAfter: middle, MaxKeys: 1000 }),
  )
  assert.is(page.StartAfter, middle)
  assert.equal(keysOf(page), ALL_KEYS.slice(KEYS / 2 + 1, KEYS / 2 + 1001))
  assert.is(page.IsTruncated, true)
  // Paging on from there reaches exactly the rest.
  const rest = await listAllV2({ StartAfter: middle, MaxKeys: 1000 }, KEYS / 1000)
  assert.equal(rest.flatMap(keysOf), ALL_KEYS.slice(KEYS / 2 + 1))
  // A start-after that is no key: the listing starts at the next key after it.
  const between = 'dir-15/sub-5/file-' // sorts before every file of that subdirectory
  const after = await s3.send(
    new ListObjectsV2Command({ Bucket: BUCKET, StartAfter: between, MaxKeys: 3 }),
  )
  const at = ALL_KEYS.findIndex((key) => byteOrder(key, between) > 0)
  assert.equal(keysOf(after), ALL_KEYS.slice(at, at + 3))
  assert.ok(keysOf(after)[0]?.startsWith(between))
  // Past the last key: an empty, complete page.
  const end = await s3.send(
    new ListObjectsV2Command({ Bucket: BUCKET, StartAfter: 'zzz', MaxKeys: 1000 }),
  )
  assert.is(end.KeyCount, 0)
  assert.is(end.IsTruncated, false)
})

test('ListObjects v1 with delimiter: NextMarker on truncated pages, markers chain', async () => {
  const seen: string[] = []
  const nextMarkers: (string | undefined)[] = []
  let marker = ''
  for (let pageIndex = 0; ; pageIndex++) {
    assert.ok(pageIndex < 4, 'too many pages')
    const page = await s3.send(
      new ListObjectsCommand({
        Bucket: BUCKET,
        Prefix: 'dir-7/',
        Delimiter: '/',
        MaxKeys: 4,
        Marker: marker,
      }),
    )
    assert.is(page.Marker === undefined ? '' : page.Marker, marker)
    assert.equal(keysOf(page), [])
    seen.push(...prefixesOf(page))
    nextMarkers.push(page.NextMarker)
    if (page.IsTruncated !== true) break
    assert.type(page.NextMarker, 'string')
    marker = page.NextMarker ?? ''
  }
  assert.equal(
    seen,
    Array.from({ length: SUBS }, (_, s) => `dir-7/sub-${s}/`),
  )
  assert.equal(nextMarkers, ['dir-7/sub-3/', 'dir-7/sub-7/', undefined])
})

test('ListObjects v1 without delimiter pages on the last key, without NextMarker', async () => {
  const prefix = 'dir-11/'
  const listed: string[] = []
  let marker = ''
  for (let pageIndex = 0; ; pageIndex++) {
    assert.ok(pageIndex < 5, 'too many pages')
    const page = await s3.send(
      new ListObjectsCommand({ Bucket: BUCKET, Prefix: prefix, MaxKeys: 300, Marker: marker }),
    )
    assert.is(page.NextMarker, undefined)
    const keys = keysOf(page)
    listed.push(...keys)
    assert.is(page.IsTruncated, listed.length < KEYS / DIRS, `IsTruncated at ${listed.length}`)
    if (page.IsTruncated !== true) break
    marker = keys[keys.length - 1] ?? ''
  }
  assert.equal(
    listed,
    ALL_KEYS.filter((key) => key.startsWith(prefix)),
  )
})

test('max-keys=0 gives an empty page that is not truncated', async () => {
  const v2 = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, MaxKeys: 0 }))
  assert.is(v2.KeyCount, 0)
  assert.is(v2.MaxKeys, 0)
  assert.equal(keysOf(v2), [])
  assert.equal(prefixesOf(v2), [])
  assert.is(v2.IsTruncated, false)
  assert.is(v2.NextContinuationToken, undefined)
  const v1 = await s3.send(new ListObjectsCommand({ Bucket: BUCKET, MaxKeys: 0, Delimiter: '/' }))
  assert.is(v1.MaxKeys, 0)
  assert.equal(keysOf(v1), [])
  assert.equal(prefixesOf(v1), [])
  assert.is(v1.IsTruncated, false)
  assert.is(v1.NextMarker, undefined)
})

test.run()
