// Goal: a lent blob file reads back as the store wrote it: a range exactly, the whole file with its
// CRC32 checked before the last chunk goes (a mismatch or a missing file fails `corrupt` and is
// reported once), its permanent path first and then its temporary one, never past its deadline,
// and its descriptor closed at the end, on cancel and on failure.
// Method: LoanSource over real files in a temp dir; descriptors counted in /proc/self/fd.
import { randomBytes } from 'node:crypto'
import { readdirSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { crc32Update } from '../../protocol/checksums.js'
import { STREAM_CHUNK_BYTES } from '../../protocol/limits.js'
import type { LentFile } from '../../protocol/messages.js'
import { LoanSource } from '../../runtime/blob-loan.js'
import { rejectionCode } from '../support/rejection.js'
import { pollUntil } from '../support/wait.js'

const BYTES = 2 * STREAM_CHUNK_BYTES + 1000
const FAR_MS = Date.now() + 60_000

async function withFile(run: (path: string, body: Buffer) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'blob-loan-test-'))
  const body = randomBytes(BYTES)
  try {
    await writeFile(join(dir, 'blob'), body)
    await run(join(dir, 'blob'), body)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

function lentOf(paths: string[], body: Buffer, crc32 = crc32Update(0, body)): LentFile {
  return { paths, sha256: 'a'.repeat(64), size: body.length, crc32 }
}

function openDescriptors(): number {
  return readdirSync('/proc/self/fd').length
}

async function drain(source: LoanSource): Promise<{ bytes: Buffer; chunks: number }> {
  const parts: Buffer[] = []
  for (let chunk = await source.next(); chunk !== null; chunk = await source.next()) {
    assert.ok(chunk.byteLength <= STREAM_CHUNK_BYTES)
    parts.push(Buffer.from(chunk))
    source.release(chunk)
  }
  return { bytes: Buffer.concat(parts), chunks: parts.length }
}

async function closedAgain(before: number): Promise<boolean> {
  return pollUntil(() => openDescriptors() === before, 2_000, 10)
}

test('a whole file reads back in chunks, and its descriptor is closed at the end', async () => {
  await withFile(async (path, body) => {
    const before = openDescriptors()
    const damage: string[] = []
    const source = new LoanSource(lentOf([path], body), FAR_MS, Date.now, (why) => damage.push(why))
    const { bytes, chunks } = await drain(source)
    assert.ok(bytes.equals(body))
    assert.is(chunks, 3)
    assert.equal(damage, [])
    assert.ok(await closedAgain(before), 'the descriptor was closed')
  })
})

test('a range reads exactly its bytes, unchecked against the whole CRC32', async () => {
  await withFile(async (path, body) => {
    const source = new LoanSource(lentOf([path], body, 12345), FAR_MS, Date.now, () => undefined)
    source.request(STREAM_CHUNK_BYTES - 10, STREAM_CHUNK_BYTES + 20)
    const { bytes } = await drain(source)
    assert.ok(bytes.equals(body.subarray(STREAM_CHUNK_BYTES - 10, STREAM_CHUNK_BYTES + 21)))
    assert.throws(() => source.request(0, BYTES), 'a range past the end is refused')
  })
})

test('a CRC32 mismatch fails before the last chunk, reported once, descriptor closed', async () => {
  await withFile(async (path, body) => {
    const before = openDescriptors()
    const damage: string[] = []
    const wrong = crc32Update(0, body) ^ 1
    const source = new LoanSource(lentOf([path], body, wrong), FAR_MS, Date.now, (why) =>
      damage.push(why),
    )
    assert.ok((await source.next()) !== null)
    assert.ok((await source.next()) !== null)
    assert.is(await rejectionCode(source.next()), 'corrupt', 'the last chunk is never handed out')
    assert.is(damage.length, 1)
    assert.ok(await closedAgain(before), 'the descriptor was closed')
  })
})

test('the temporary path is read when the permanent one is missing; none is corrupt', async () => {
  await withFile(async (path, body) => {
    const damage: string[] = []
    const onDamage = (why: string): void => void damage.push(why)
    const fallback = new LoanSource(
      lentOf([`${path}-gone`, path], body),
      FAR_MS,
      Date.now,
      onDamage,
    )
    assert.ok((await drain(fallback)).bytes.equals(body))
    const missing = new LoanSource(lentOf([`${path}-gone`], body), FAR_MS, Date.now, onDamage)
    assert.is(await rejectionCode(missing.next()), 'corrupt')
    assert.is(damage.length, 1)
  })
})

test('past its deadline a read fails `timeout`; a cancel closes the descriptor', async () => {
  await withFile(async (path, body) => {
    const before = openDescriptors()
    let nowMs = 0
    const source = new LoanSource(
      lentOf([path], body),
      1_000,
      () => nowMs,
      () => undefined,
    )
    assert.ok((await source.next()) !== null)
    nowMs = 2_000
    assert.is(await rejectionCode(source.next()), 'timeout')
    assert.ok(await closedAgain(before))
    const cancelled = new LoanSource(lentOf([path], body), FAR_MS, Date.now, () => undefined)
    assert.ok((await cancelled.next()) !== null)
    cancelled.cancel()
    assert.is(await cancelled.next(), null)
    assert.ok(await closedAgain(before), 'the cancelled read closed its descriptor')
  })
})

test.run()
