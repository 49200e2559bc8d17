// Goal: the file-system BlobFiles adapter keeps its contract: temporary files become permanent by
// an idempotent promotion, reads fall back to tmp/ for a file a crash left unpromoted, ids that
// are not store-chosen hex never reach a path, read chunks own their buffers (they get
// transferred), and a write the data volume has no room for fails as insufficient_storage.
// Method: drive openBlobFiles in a fresh temp dir per test and look at the directory tree directly.
import { existsSync } from 'node:fs'
import { link, mkdir, readdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { ServiceError } from '../../protocol/errors.js'
import { openBlobFiles, type BlobSpace } from '../../runtime/blob-files.js'
import { withBlobFiles } from '../support/blob-dir.js'

const ID = '0123456789abcdef0123456789abcdef'
const OTHER = 'fedcba9876543210fedcba9876543210'

async function readAll(
  files: Awaited<ReturnType<typeof openBlobFiles>>,
  id: string,
): Promise<string> {
  const reader = await files.open(id)
  assert.ok(reader !== undefined)
  const bytes = await reader.read(0, reader.size)
  await reader.close()
  return Buffer.from(bytes).toString()
}

test('a temporary file is readable, then promoted into its fan-out directory', () =>
  withBlobFiles(async (files, dir) => {
    const writer = await files.create(ID)
    await writer.write(Buffer.from('hello '))
    await writer.write(Buffer.from('world'))
    await writer.commit()
    assert.ok(existsSync(join(dir, 'tmp', ID)))
    assert.equal(await files.listTemporary(), [ID])
    // Committed but not promoted (a crash in between): still readable, from tmp/.
    assert.is(await readAll(files, ID), 'hello world')
    await files.promote(ID)
    assert.ok(existsSync(join(dir, 'blobs', '01', ID)))
    assert.not.ok(existsSync(join(dir, 'tmp', ID)))
    assert.equal(await files.listTemporary(), [])
    assert.is(await readAll(files, ID), 'hello world')
    await files.promote(ID) // idempotent
    assert.is(await readAll(files, ID), 'hello world')
  }))

test('writes run several at a time yet land in order; each says when its buffer is free', () =>
  withBlobFiles(async (files) => {
    const chunks = Array.from({ length: 40 }, (_, index) => Buffer.alloc(70_001, index))
    const written: number[] = []
    const writer = await files.create(ID)
    for (const [index, chunk] of chunks.entries()) {
      await writer.write(chunk, () => written.push(index))
    }
    await writer.commit()
    assert.equal(
      [...written].sort((a, b) => a - b),
      chunks.map((_, index) => index),
    )
    const reader = await files.open(ID)
    assert.ok(reader !== undefined)
    assert.ok(Buffer.from(await reader.read(0, reader.size)).equals(Buffer.concat(chunks)))
    await reader.close()
  }))

test('a discard while writes are still running waits for them and leaves no file', () =>
  withBlobFiles(async (files, dir) => {
    const writer = await files.create(ID)
    for (let index = 0; index < 3; index++) await writer.write(Buffer.alloc(1 << 20, index))
    await writer.discard()
    assert.equal(await readdir(join(dir, 'tmp')), [])
  }))

test('remove deletes a permanent or a still-temporary file; missing files are fine', () =>
  withBlobFiles(async (files) => {
    for (const id of [ID, OTHER]) {
      const writer = await files.create(id)
      await writer.write(Buffer.from(id))
      await writer.commit()
    }
    await files.promote(ID)
    await files.remove(ID)
    await files.remove(OTHER)
    assert.is(await files.open(ID), undefined)
    assert.is(await files.open(OTHER), undefined)
    await files.remove(ID)
    await files.removeTemporary(OTHER)
    await assertRejects(() => files.promote(ID))
  }))

test('discard deletes the temporary file; a reused id is refused', () =>
  withBlobFiles(async (files) => {
    const writer = await files.create(ID)
    await writer.write(Buffer.from('partial'))
    await assertRejects(() => files.create(ID))
    await writer.discard()
    assert.equal(await files.listTemporary(), [])
    assert.is(await files.open(ID), undefined)
  }))

test('ids that are not store-chosen hex never become paths', () =>
  withBlobFiles(async (files, dir) => {
    for (const bad of ['../escape', 'ABCDEF0123456789', '', 'abc', `${ID}/x`, `${ID}\0`, '..']) {
      await assertRejects(() => files.create(bad))
      await assertRejects(() => files.open(bad))
      await assertRejects(() => files.promote(bad))
      await assertRejects(() => files.remove(bad))
    }
    assert.equal((await readdir(dir)).sort(), ['blobs', 'tmp'])
  }))

test('listTemporary ignores foreign names; removeTemporary leaves permanent files', () =>
  withBlobFiles(async (files, dir) => {
    await writeFile(join(dir, 'tmp', 'README'), 'not ours')
    const writer = await files.create(ID)
    await writer.commit()
    assert.equal(await files.listTemporary(), [ID])
    await files.promote(ID)
    await files.removeTemporary(ID)
    assert.ok(await files.open(ID).then((reader) => reader?.close().then(() => true)))
  }))

test('reads: ranges, short reads at the end, chunks that own their buffers', () =>
  withBlobFiles(async (files) => {
    const writer = await files.create(ID)
    const body = Buffer.alloc(10_000, 'x')
    body.write('start', 0)
    body.write('end', 9_997)
    await writer.write(body)
    await writer.commit()
    await files.promote(ID)
    const reader = await files.open(ID)
    assert.ok(reader !== undefined)
    assert.is(reader.size, 10_000)
    assert.is(Buffer.from(await reader.read(0, 5)).toString(), 'start')
    const tail = await reader.read(9_997, 100)
    assert.is(Buffer.from(tail).toString(), 'end')
    const small = await reader.read(5, 3)
    // A pooled Buffer would share an 8 KiB ArrayBuffer; transferring it would break other code.
    assert.is(small.buffer.byteLength, 3)
    await reader.close()
    assert.ok(await files.admits(10_000))
  }))

test('a chunk the volume has no room for fails the write as insufficient_storage', () => {
  let looks = 0
  const full: BlobSpace = {
    admits: () => Promise.resolve(false),
    spend: () => Promise.resolve(++looks > 1),
    exhausted: () => undefined,
  }
  return withBlobFiles(async (files, dir) => {
    const writer = await files.create(ID)
    const refused = await writer.write(new Uint8Array(100)).then(
      () => null,
      (error: unknown) => error,
    )
    assert.ok(refused instanceof ServiceError)
    assert.is(refused.code, 'insufficient_storage')
    await writer.discard()
    assert.equal(await readdir(join(dir, 'tmp')), [])
    assert.is(await files.admits(1), false)
  }, full)
})

test('an unlinked file stays readable through a reader opened before', () =>
  withBlobFiles(async (files) => {
    const writer = await files.create(ID)
    await writer.write(Buffer.from('still here'))
    await writer.commit()
    await files.promote(ID)
    const reader = await files.open(ID)
    assert.ok(reader !== undefined)
    await files.remove(ID)
    assert.is(Buffer.from(await reader.read(0, reader.size)).toString(), 'still here')
    await reader.close()
  }))

test('promotion never replaces another file of the same id; a half-done one completes', () =>
  withBlobFiles(async (files, dir) => {
    const first = await files.create(ID)
    await first.write(Buffer.from('first'))
    await first.commit()
    await files.promote(ID)
    const clash = await files.create(ID)
    await clash.write(Buffer.from('second'))
    await clash.commit()
    await assertRejects(() => files.promote(ID))
    assert.is(await readAll(files, ID), 'first')
    await files.removeTemporary(ID)
    // A crash between the link and the unlink leaves both names on one file.
    const other = await files.create(OTHER)
    await other.write(Buffer.from('other'))
    await other.commit()
    await mkdir(join(dir, 'blobs', 'fe'), { recursive: true })
    await link(join(dir, 'tmp', OTHER), join(dir, 'blobs', 'fe', OTHER))
    await files.promote(OTHER)
    assert.equal(await files.listTemporary(), [])
    assert.is(await readAll(files, OTHER), 'other')
  }))

async function assertRejects(run: () => Promise<unknown>): Promise<void> {
  let failed = false
  try {
    await run()
  } catch {
    failed = true
  }
  assert.ok(failed, 'expected a rejection')
}

test.run()
