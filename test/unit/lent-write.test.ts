// Goal: a lent write (the store lends a temporary file, the sender writes and hashes the body
// there) hands the store the body's exact digests only once the file holds every byte, fails the
// sender at once when the store cancels or goes away, refuses a body longer than announced, and
// refuses bytes sent on a stream that lent its file. Method: the runtime's two ends on a real
// MessageChannel, the real blob files in a temp dir, digests checked against node:crypto and zlib.
import { createHash, randomBytes } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { crc32 } from 'node:zlib'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import type { ByteSink } from '../../protocol/actor.js'
import { checksumBase64 } from '../../protocol/checksums.js'
import { STREAM_CHUNK_BYTES } from '../../protocol/limits.js'
import { LentWriteSink } from '../../runtime/lent-write-sink.js'
import { asPort, openStream, PortSink, PortSource } from '../../runtime/stream-port.js'
import { withBlobFiles } from '../support/blob-dir.js'
import { rejectionCode } from '../support/rejection.js'

const ID = '0123456789abcdef0123456789abcdef'

/** Writes `body` through `sink` in stream-sized chunks, as pumpBody does. */
async function send(sink: ByteSink, body: Buffer): Promise<void> {
  for (let at = 0; at < body.byteLength; at += STREAM_CHUNK_BYTES) {
    const chunk = sink.buffer()
    const piece = body.subarray(at, at + STREAM_CHUNK_BYTES)
    chunk.set(piece)
    await sink.write(chunk.subarray(0, piece.byteLength))
  }
}

test('the store gets the digests of the bytes the file holds, and the MD5 with the end', () =>
  withBlobFiles(async (files) => {
    const body = randomBytes(3 * STREAM_CHUNK_BYTES + 123)
    const [storeEnd, senderEnd] = openStream()
    const source = new PortSource(storeEnd)
    const sink = new LentWriteSink(senderEnd, body.byteLength, ['crc32c', 'sha256'], Date.now)
    const loan = await files.createLent(ID)
    const taken = source.lendWrite(loan)
    await send(sink, body)
    const md5 = createHash('md5').update(body).digest('hex')
    sink.end({ 'x-amz-checksum-crc32c': 'sent' }, md5)
    const written = await taken
    assert.equal(written, {
      size: body.byteLength,
      sha256Hex: createHash('sha256').update(body).digest('hex'),
      crc32: crc32(body),
      checksums: { crc32c: await checksumBase64('crc32c', body) },
    })
    assert.is(source.md5(), md5)
    assert.equal(source.trailers(), { 'x-amz-checksum-crc32c': 'sent' })
    assert.ok((await readFile(loan.path)).equals(body))
  }))

test('an empty body is a lent write too: an empty file and the empty digests', () =>
  withBlobFiles(async (files) => {
    const [storeEnd, senderEnd] = openStream()
    const source = new PortSource(storeEnd)
    const sink = new LentWriteSink(senderEnd, 0, [], Date.now)
    const taken = source.lendWrite(await files.createLent(ID))
    sink.end({}, createHash('md5').digest('hex'))
    const written = await taken
    assert.is(written.size, 0)
    assert.is(written.sha256Hex, createHash('sha256').digest('hex'))
  }))

test('a store that cancels or goes away fails the next write at once', async () => {
  for (const how of ['cancel', 'gone'] as const) {
    await withBlobFiles(async (files) => {
      const [storeEnd, senderEnd] = openStream()
      const source = new PortSource(storeEnd)
      const sink = new LentWriteSink(senderEnd, 4 * STREAM_CHUNK_BYTES, [], Date.now)
      void source.lendWrite(await files.createLent(ID)).catch(() => undefined)
      await send(sink, randomBytes(STREAM_CHUNK_BYTES))
      if (how === 'cancel') source.cancel('no_such_bucket', 'gone meanwhile')
      else asPort(storeEnd).close()
      const code = await rejectionCode(
        (async () => {
          // Bounded: the failure arrives within a few turns of the event loop.
          for (let turn = 0; turn < 100; turn++) {
            await send(sink, randomBytes(16))
            await new Promise((resolve) => setImmediate(resolve))
          }
        })(),
      )
      assert.is(code, how === 'cancel' ? 'no_such_bucket' : 'unavailable', how)
    })
  }
})

test('a body longer than announced is refused, and the store hears of the abort', () =>
  withBlobFiles(async (files) => {
    const [storeEnd, senderEnd] = openStream()
    const source = new PortSource(storeEnd)
    const sink = new LentWriteSink(senderEnd, 100, [], Date.now)
    const taken = rejectionCode(source.lendWrite(await files.createLent(ID)))
    const code = await rejectionCode(send(sink, randomBytes(101)))
    assert.is(code, 'incomplete_body')
    sink.abort('incomplete_body', 'too long')
    assert.is(await taken, 'incomplete_body')
  }))

test('bytes sent on a stream that lent its file are refused', () =>
  withBlobFiles(async (files) => {
    const [storeEnd, senderEnd] = openStream()
    const source = new PortSource(storeEnd)
    const sink = new PortSink(senderEnd)
    const taken = rejectionCode(source.lendWrite(await files.createLent(ID)))
    // The sender of bytes sends before it hears of the loan, and is cancelled by it.
    const sent = rejectionCode(send(sink, randomBytes(STREAM_CHUNK_BYTES)))
    assert.is(await taken, 'invalid_request')
    assert.is(await sent, 'ok')
  }))

test.run()
