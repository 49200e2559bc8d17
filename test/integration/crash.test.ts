/** Goal: kill -9 at any instant loses no acknowledged write and shows no partial object, and the
 * garbage of interrupted uploads is reclaimed at the next start. Method: 20 uploads of different
 * sizes (inline and streamed) run at once; after the first acknowledgements the server is
 * SIGKILLed; a new server on the same data directory must return every acknowledged object
 * bit-exact, list only complete objects, and leave no temporary blob files behind. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { createHash, randomBytes } from 'node:crypto'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import {
  CreateBucketCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
} from '@aws-sdk/client-s3'
import { startServer } from '../support/server.js'

const UPLOADS = 20
const KILL_AFTER_ACKS = 4

function bodyFor(i: number): Buffer {
  // Sizes from 1 KiB to ~6 MiB so the kill lands while some are mid-stream.
  return randomBytes(i % 4 === 0 ? 1024 * (i + 1) : 300 * 1024 * (i + 1))
}

test('SIGKILL while 20 uploads are in flight loses no acknowledged object', async () => {
  const first = await startServer()
  const s3 = first.client()
  await s3.send(new CreateBucketCommand({ Bucket: 'crash' }))
  const bodies = Array.from({ length: UPLOADS }, (_, i) => bodyFor(i))
  const acked = new Set<number>()
  let killed: Promise<void> | null = null
  const uploads = bodies.map(async (body, i) => {
    try {
      await s3.send(new PutObjectCommand({ Bucket: 'crash', Key: `object-${i}`, Body: body }))
      acked.add(i)
      if (acked.size >= KILL_AFTER_ACKS) killed ??= first.kill()
    } catch {
      // Cut off by the kill: not acknowledged, so it may or may not exist afterwards.
    }
  })
  await Promise.all(uploads)
  await (killed ?? first.kill())
  s3.destroy()
  assert.ok(acked.size >= KILL_AFTER_ACKS, `only ${acked.size} uploads acknowledged`)
  assert.ok(acked.size < UPLOADS, 'the kill came after every upload finished: nothing was tested')

  const second = await startServer({ dataDir: first.dataDir })
  const after = second.client()
  try {
    for (const i of acked) {
      const got = await after.send(new GetObjectCommand({ Bucket: 'crash', Key: `object-${i}` }))
      const bytes = Buffer.from(await got.Body!.transformToByteArray())
      assert.ok(bytes.equals(bodies[i]!), `acknowledged object-${i} differs after the crash`)
    }
    const listed = await after.send(new ListObjectsV2Command({ Bucket: 'crash' }))
    for (const entry of listed.Contents ?? []) {
      const i = Number(entry.Key!.slice('object-'.length))
      const md5 = createHash('md5').update(bodies[i]!).digest('hex')
      assert.is(entry.ETag, `"${md5}"`, `listed ${entry.Key} is not the complete object`)
      assert.is(entry.Size, bodies[i]!.length)
    }
    const temporary = readdirSync(join(first.dataDir, 'tmp'))
    assert.equal(temporary, [], 'temporary blob files survived the restart')
  } finally {
    after.destroy()
    await second.stop()
    second.cleanup()
  }
})

test.run()
