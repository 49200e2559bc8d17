/** Goal: the scrubber reads every blob of its store at its pace, finds a flipped byte in a file
 * blob and in an inline one (read twice: one bad read is no corruption), counts each once, marks
 * it so that reads answer `corrupt` before any byte, resumes its pass from its saved cursor after a
 * restart, checks at once a blob a GET found bad, and in cluster mode heals a copy from a peer's,
 * which its store verifies (a copy with another SHA-256 is refused) and swaps in crash-safely.
 * Method: the real replica-store and the real scrubber, each on a fake context (in-memory kv and
 * blob files) sharing one manual clock, wired to each other through the contexts' call handlers;
 * other nodes are a fake `peers` answering Replica.Read with bytes chosen by the test. */
import { createHash } from 'node:crypto'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { replicaStore, type StoreState } from '../../actors/replica-store/replica-store.js'
import { blobKey, inlineKey, localKey } from '../../actors/replica-store/keys.js'
import { decodeBlob } from '../../actors/replica-store/records.js'
import { scrubber } from '../../actors/scrubber/scrubber.js'
import {
  BLOB_COST_BYTES_MIN,
  nextPaceMs,
  progressOf,
  scanBytesPerMs,
  SCAN_BYTES_PER_SECOND_MIN,
} from '../../actors/scrubber/pace.js'
import type { ScrubberState } from '../../actors/scrubber/scrub-state.js'
import { handle, type BlobReader } from '../../protocol/actor.js'
import { crc32Update } from '../../protocol/checksums.js'
import type { Member } from '../../protocol/cluster.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import type { GetResult, StoreMsg } from '../../protocol/messages.js'
import { SCRUBBER_RECORD, type ScrubberMsg, type ScrubberStatus } from '../../protocol/scrubbing.js'
import {
  fakeContext,
  ManualClock,
  MemoryBlobs,
  MemoryKv,
  memoryStream,
  MemoryStream,
  type FakeContext,
} from '../support/fake-context.js'

const DAY_MS = 86_400_000
const BUCKET = 'scrubbed'
const FILE_BYTES = 200 * 1024
const INLINE_BYTES = 1024

function pattern(size: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(size)
  for (let index = 0; index < size; index++) bytes[index] = (index * 31 + seed * 7) & 0xff
  return bytes
}

function sameBytes(actual: Uint8Array | undefined, expected: Uint8Array): void {
  assert.ok(actual !== undefined, 'no bytes')
  assert.ok(Buffer.from(actual as Uint8Array).equals(Buffer.from(expected)), 'other bytes')
}

function sha256Of(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex')
}

interface Node {
  clock: ManualClock
  kv: MemoryKv
  blobs: MemoryBlobs
  storeCtx: FakeContext
  store: StoreState
  scrubCtx: FakeContext
  scrub: ScrubberState
  toStore<T>(body: object): Promise<Result<T>>
  status(): ScrubberStatus
}

interface NodeOptions {
  clock?: ManualClock
  kv?: MemoryKv
  blobs?: MemoryBlobs
  days?: number
  /** Cluster mode, with these other members of the pool. */
  peers?: Member[]
}

function member(id: string): Member {
  return {
    id,
    kind: 'node',
    pool: 'p1',
    poolHash: null,
    httpAddr: '',
    grpcAddr: `127.0.0.1:${id}`,
    incarnation: 1,
    status: 'Alive',
    phase: 'serving',
    version: 'test',
    freeBytes: 0,
    wallMs: 0,
  }
}

/** A store and its scrubber, wired to each other. */
async function startNode(options: NodeOptions = {}): Promise<Node> {
  const clock = options.clock ?? new ManualClock()
  const kv = options.kv ?? new MemoryKv()
  const blobs = options.blobs ?? new MemoryBlobs()
  const config: Record<string, string> = {
    SVC_SCRUBBER_FULL_SCAN_DAYS: String(options.days ?? 30),
    ...(options.peers === undefined
      ? { SVC_MODE: 'single' }
      : { SVC_MODE: 'cluster', SVC_NODE_ID: 'n1', SVC_POOL_NAME: 'p1' }),
  }
  // The store runs in single mode here: its catalog's sync is not what is tested.
  const storeCtx = fakeContext({ clock, kv, blobs, config: { SVC_MODE: 'single' } })
  const store = await replicaStore.init(storeCtx)
  const scrubCtx = fakeContext({ self: 'scrubber', clock, config, seed: 7 })
  const node = { clock, kv, blobs, storeCtx, store, scrubCtx } as Node
  const toStore = <T>(body: object): Promise<Result<T>> => {
    const msg = { requestId: 'test', deadlineMs: clock.nowMs + 60_000, ...body } as StoreMsg
    return handle(replicaStore, store, msg, storeCtx) as Promise<Result<T>>
  }
  node.toStore = toStore
  scrubCtx.onCall((to, msg) => {
    if (to === 'replica-store') return toStore(msg)
    if (to === 'gossiper') {
      const members = [member('n1'), ...(options.peers ?? [])]
      return ok({ self: members[0], members, maxClockSkewMs: 0 })
    }
    return fail('unavailable', `${to} is not wired`)
  })
  storeCtx.onCall((to, msg) => {
    if (to !== 'scrubber') return fail('unavailable', `${to} is not wired`)
    return handle(scrubber, node.scrub, msg as ScrubberMsg, scrubCtx)
  })
  node.scrub = await scrubber.init(scrubCtx)
  node.status = () => {
    const answer = handle(scrubber, node.scrub, statusMsg(), scrubCtx) as Result<ScrubberStatus>
    assert.ok(answer.ok)
    return (answer as { value: ScrubberStatus }).value
  }
  // A store on another's kv (a restart) has its bucket already.
  if (options.kv === undefined)
    assert.ok((await toStore({ kind: 'bucket.create', bucket: BUCKET })).ok)
  return node
}

function statusMsg(): ScrubberMsg {
  return { kind: 'scrubber.status', requestId: 'test', deadlineMs: Number.MAX_SAFE_INTEGER }
}

async function put(node: Node, key: string, body: Uint8Array): Promise<string> {
  const answer = await node.toStore({
    kind: 'object.put',
    bucket: BUCKET,
    key,
    http: {},
    userMeta: {},
    expect: {},
    body: new Uint8Array(body),
  })
  assert.ok(answer.ok, answer.ok ? '' : answer.detail)
  await flush()
  return sha256Of(body)
}

function fileOf(node: Node, sha256: string): string {
  const stored = node.kv.get(blobKey(sha256))
  assert.ok(stored !== undefined)
  const file = decodeBlob(stored as Uint8Array).file
  assert.ok(file !== undefined)
  return file as string
}

/** Lets commits land and awaited promises run (MemoryKv lands on the next macrotask). */
async function flush(): Promise<void> {
  for (let round = 0; round < 8; round++) await new Promise((resolve) => setImmediate(resolve))
}

/** Moves virtual time in steps until `check` holds; false if it never did within `limitMs`. */
async function runUntil(node: Node, check: () => boolean, limitMs: number): Promise<boolean> {
  const stepMs = 10
  for (let elapsed = 0; elapsed <= limitMs; elapsed += stepMs) {
    await flush()
    if (check()) return true
    node.clock.advance(stepMs)
  }
  return check()
}

/** A GET of `key` as the ingress makes it: a first look (`inline`), then a streamed read. `first`
 * is the first look's answer (ok, or its code: a copy known damaged fails here, before any byte),
 * `read` the streamed read's. */
async function get(
  node: Node,
  key: string,
): Promise<{ first: string; read?: string; bytes?: Uint8Array }> {
  const look = await node.toStore<GetResult>({
    kind: 'object.get',
    bucket: BUCKET,
    key,
    inline: true,
  })
  if (!look.ok) return { first: look.code }
  if (look.value.body !== undefined) return { first: 'ok', read: 'ok', bytes: look.value.body }
  const stream = memoryStream()
  const answer = await node.toStore<GetResult>({
    kind: 'object.get',
    bucket: BUCKET,
    key,
    stream: stream.handle,
  })
  if (!answer.ok) return { first: 'ok', read: answer.code }
  stream.request(0, answer.value.info.size - 1)
  const outcome = await stream.received()
  if (!outcome.ended) return { first: 'ok', read: outcome.code }
  return { first: 'ok', read: 'ok', bytes: outcome.bytes }
}

/** Rewrites an inline blob's bytes with one bit flipped (a disk fault inside the kv). */
async function corruptInline(node: Node, sha256: string): Promise<void> {
  const stored = node.kv.get(inlineKey(sha256)) as Uint8Array
  const damaged = new Uint8Array(stored)
  damaged[3] = (damaged[3] ?? 0) ^ 1
  await node.kv.commit([{ type: 'put', key: inlineKey(sha256), value: damaged }])
}

async function stopScrubber(node: Node): Promise<void> {
  const stopped = scrubber.stop?.(node.scrub, node.scrubCtx)
  await flush()
  await stopped
}

test('pace: at least 1 MiB/s, or the stored bytes over the period when that is faster', () => {
  const floor = SCAN_BYTES_PER_SECOND_MIN / 1000
  assert.is(scanBytesPerMs(1024, 30 * DAY_MS), floor)
  assert.is(scanBytesPerMs(10 * 2 ** 40, DAY_MS), (10 * 2 ** 40) / DAY_MS)
  // A blob costs its size, and small ones a read's worth; a pace behind the clock restarts now.
  assert.is(nextPaceMs(0, 1_000, 2 ** 20, floor), 2_000)
  assert.is(nextPaceMs(5_000, 1_000, 1, floor), 5_000 + BLOB_COST_BYTES_MIN / floor)
  assert.is(progressOf(null), 0)
  assert.is(progressOf('8'.padEnd(64, '0')), 0.5)
})

test('a pass finds a flipped byte in a file blob and an inline one, each once', async () => {
  const node = await startNode({ days: 0.0001 })
  const file = await put(node, 'file', pattern(FILE_BYTES, 1))
  const inline = await put(node, 'inline', pattern(INLINE_BYTES, 2))
  await put(node, 'good', pattern(FILE_BYTES, 3))
  node.blobs.corrupt(fileOf(node, file), 12_345)
  await corruptInline(node, inline)
  // The first pass starts within a quarter period (2.2 s), and takes well under a second.
  assert.ok(await runUntil(node, () => node.status().blobs_scanned >= 3, 4_000))
  assert.equal(node.status(), {
    blobs_scanned: 3,
    corruptions_found: 2,
    corruptions_healed: 0,
    full_scan_progress: 1,
  })
  const errors = node.scrubCtx.logs.filter((entry) => entry.level === 'error')
  assert.ok(errors.some((entry) => entry.fields['sha256'] === file))
  assert.ok(errors.some((entry) => entry.fields['sha256'] === inline))
  // Marked: reads answer corrupt before any byte, the good object reads whole.
  assert.is(decodeBlob(node.kv.get(blobKey(file)) as Uint8Array).corrupt, true)
  assert.is((await get(node, 'file')).first, 'corrupt')
  assert.is((await get(node, 'inline')).first, 'corrupt')
  sameBytes((await get(node, 'good')).bytes, pattern(FILE_BYTES, 3))
  // The next pass (a period after the first began) finds them again, and counts them no more.
  assert.ok(await runUntil(node, () => node.status().blobs_scanned >= 6, 10_000))
  assert.is(node.status().corruptions_found, 2)
  await stopScrubber(node)
})

test('one bad read is no corruption: a blob is read again before it is counted', async () => {
  /** Blob files whose first read of one file carries a flipped byte, as a failing disk read. */
  class FlakyBlobs extends MemoryBlobs {
    flaky: string | null = null
    override async open(id: string): Promise<BlobReader | undefined> {
      const reader = await super.open(id)
      if (reader === undefined || id !== this.flaky) return reader
      this.flaky = null
      return {
        size: reader.size,
        read: async (offset, length) => {
          const bytes = await reader.read(offset, length)
          bytes[0] = (bytes[0] ?? 0) ^ 1
          return bytes
        },
        close: () => reader.close(),
      }
    }
  }
  const blobs = new FlakyBlobs()
  const node = await startNode({ days: 0.0001, blobs })
  const sha256 = await put(node, 'flaky', pattern(FILE_BYTES, 4))
  blobs.flaky = fileOf(node, sha256)
  assert.ok(await runUntil(node, () => node.status().blobs_scanned >= 1, 4_000))
  assert.is(blobs.flaky, null, 'the flaky read happened')
  assert.is(node.status().corruptions_found, 0)
  assert.ok(node.scrubCtx.logs.some((entry) => /failed its CRC32 once/.test(entry.message)))
  sameBytes((await get(node, 'flaky')).bytes, pattern(FILE_BYTES, 4))
  await stopScrubber(node)
})

test('the pass is paced: 1 MiB/s at least, faster when the period asks for it', async () => {
  const slow = await startNode({ days: 30 })
  for (let n = 0; n < 8; n++) await put(slow, `k${n}`, pattern(256 * 1024, 10 + n))
  // A fresh node's first pass starts within a quarter period: make it now.
  slow.scrub.nextPassMs = slow.clock.nowMs
  slow.scrub.wake?.()
  // 2 MiB at 1 MiB/s: about half after one second, all after two and a bit.
  await runUntil(slow, () => false, 1_000)
  const halfway = slow.status().blobs_scanned
  assert.ok(halfway >= 3 && halfway <= 6, `scanned ${halfway} of 8 after 1 s`)
  assert.ok(await runUntil(slow, () => slow.status().blobs_scanned === 8, 1_500))
  await stopScrubber(slow)

  // The same 2 MiB over a period of 0.864 s (and more of it counted: every reference).
  const fast = await startNode({ days: 0.00001 })
  for (let n = 0; n < 8; n++) await put(fast, `k${n}`, pattern(256 * 1024, 10 + n))
  fast.scrub.nextPassMs = fast.clock.nowMs
  fast.scrub.wake?.()
  assert.ok(await runUntil(fast, () => fast.status().blobs_scanned === 8, 900))
  await stopScrubber(fast)
})

test('a restarted scrubber resumes its pass from its saved cursor', async () => {
  const node = await startNode({ days: 30 })
  const count = 8
  const shas: string[] = []
  for (let n = 0; n < count; n++) shas.push(await put(node, `k${n}`, pattern(256 * 1024, 20 + n)))
  node.scrub.nextPassMs = node.clock.nowMs
  node.scrub.wake?.()
  assert.ok(await runUntil(node, () => node.status().blobs_scanned >= 3, 2_000))
  // A graceful stop saves where the pass is; the next scrubber reads it from the store.
  await stopScrubber(node)
  const record = node.kv.get(localKey(SCRUBBER_RECORD))
  assert.ok(record !== undefined)
  const saved = JSON.parse(Buffer.from(record as Uint8Array).toString()) as { cursor: string }
  const done = shas.filter((sha) => sha <= saved.cursor).length
  assert.ok(done >= 2 && done < count, `${done} of ${count} done`)
  const next = await startNode({ clock: node.clock, kv: node.kv, blobs: node.blobs, days: 30 })
  assert.ok(await runUntil(next, () => next.status().blobs_scanned === count - done, 3_000))
  await runUntil(next, () => false, 500)
  assert.is(next.status().blobs_scanned, count - done, 'no blob before the cursor read again')
  assert.is(next.status().full_scan_progress, 1)
  await stopScrubber(next)
})

test('after a GET met a corrupt blob, reads fail at once, and it is checked now', async () => {
  // A period of 30 days: the pass does not run, only the GET's report.
  const node = await startNode({ days: 30 })
  const sha256 = await put(node, 'read', pattern(FILE_BYTES, 5))
  node.blobs.corrupt(fileOf(node, sha256), 100)
  // One chunk: the CRC32 fails before the first byte, and the stream is aborted as corrupt.
  assert.equal(await get(node, 'read'), { first: 'ok', read: 'corrupt' })
  // Known damaged now: the first look answers corrupt, no byte is read.
  assert.equal(await get(node, 'read'), { first: 'corrupt' })
  assert.ok(await runUntil(node, () => node.status().corruptions_found === 1, 1_000))
  assert.is(node.status().blobs_scanned, 1)
  assert.is(node.status().full_scan_progress, 0)
  // The bytes right again (another read fault): the next check reads them right and clears it.
  node.blobs.corrupt(fileOf(node, sha256), 100)
  const check = { kind: 'scrubber.check' as const, sha256, requestId: 'test', deadlineMs: 0 }
  await handle(scrubber, node.scrub, check, node.scrubCtx)
  assert.ok(await runUntil(node, () => !node.store.damaged.has(sha256), 1_000))
  sameBytes((await get(node, 'read')).bytes, pattern(FILE_BYTES, 5))
  assert.is(node.status().blobs_scanned, 2)
  await stopScrubber(node)
})

/** A peer answering Replica.Read of a blob with `bytes` on the call's stream. */
function peerServing(bytes: (peer: string) => Uint8Array | null) {
  return (
    to: { id: string | null },
    method: string,
    body: object,
    stream: unknown,
  ): Result<unknown> => {
    assert.is(method, 'Replica.Read')
    assert.is((body as { msg: { kind: string } }).msg.kind, 'blob.read')
    const sink = (stream as MemoryStream).asSink()
    const served = bytes(to.id ?? '')
    if (served === null) {
      sink.abort('no_such_key', 'no such blob here')
      return fail('no_such_key', 'no such blob here')
    }
    void sink.write(served).then(() => sink.end())
    return ok({ size: served.byteLength, crc32: 0, load: 0 })
  }
}

test('cluster mode: a corrupt copy is healed from a peer, checked before it replaces', async () => {
  const body = pattern(FILE_BYTES, 6)
  const node = await startNode({ days: 0.0001, peers: [member('n2'), member('n3')] })
  const sha256 = await put(node, 'healed', body)
  const before = fileOf(node, sha256)
  node.blobs.corrupt(before, 7)
  // n2 sends other bytes of the same size (its copy went wrong); n3 the blob's own.
  const other = pattern(FILE_BYTES, 66)
  node.scrubCtx.onPeerCall(peerServing((peer) => (peer === 'n2' ? other : body)))
  assert.ok(await runUntil(node, () => node.status().corruptions_healed === 1, 4_000))
  await flush()
  assert.is(node.status().corruptions_found, 1)
  const after = fileOf(node, sha256)
  assert.is.not(after, before)
  sameBytes(node.blobs.permanent.get(after), body)
  assert.is(node.blobs.permanent.has(before), false, 'the corrupt file is garbage, removed')
  assert.is(decodeBlob(node.kv.get(blobKey(sha256)) as Uint8Array).corrupt, undefined)
  sameBytes((await get(node, 'healed')).bytes, body)
  await stopScrubber(node)
})

/** Other bytes of the same size and the same CRC32: CRC32 is affine over GF(2), so flipping a set
 * of bits whose effects on it cancel out leaves it unchanged. Of 40 single-bit flips (40 vectors
 * in a space of 32 dimensions) some set does; Gaussian elimination finds it. */
function crc32Twin(bytes: Uint8Array): Uint8Array {
  const zeros = crc32Update(0, new Uint8Array(bytes.byteLength))
  const basis = new Map<number, { effect: number; bits: bigint }>()
  for (let bit = 0; bit < 40; bit++) {
    const flip = new Uint8Array(bytes.byteLength)
    flip[bit >> 3] = 1 << (bit & 7)
    let effect = (crc32Update(0, flip) ^ zeros) >>> 0
    let bits = 1n << BigInt(bit)
    for (let pivot = 31; pivot >= 0 && effect !== 0; pivot--) {
      const row = basis.get(pivot)
      if (((effect >>> pivot) & 1) === 1 && row !== undefined) {
        effect = (effect ^ row.effect) >>> 0
        bits ^= row.bits
      }
    }
    if (effect !== 0) {
      basis.set(31 - Math.clz32(effect), { effect, bits })
      continue
    }
    const twin = new Uint8Array(bytes)
    for (let flipped = 0; flipped < 40; flipped++) {
      if (((bits >> BigInt(flipped)) & 1n) === 1n) {
        twin[flipped >> 3] = (twin[flipped >> 3] ?? 0) ^ (1 << (flipped & 7))
      }
    }
    return twin
  }
  throw new Error('40 vectors of 32 bits are dependent')
}

test('cluster mode: a peer copy of another SHA-256 is refused; the copy stays marked', async () => {
  const body = pattern(FILE_BYTES, 8)
  const node = await startNode({ days: 0.0001, peers: [member('n2')] })
  const sha256 = await put(node, 'refused', body)
  const file = fileOf(node, sha256)
  node.blobs.corrupt(file, 9)
  // n2's copy has the blob's size and CRC32, but not its bytes: only the SHA-256 tells.
  const twin = crc32Twin(body)
  assert.is(crc32Update(0, twin), crc32Update(0, body))
  assert.is.not(sha256Of(twin), sha256)
  node.scrubCtx.onPeerCall(peerServing(() => twin))
  assert.ok(await runUntil(node, () => node.status().corruptions_found === 1, 4_000))
  await runUntil(node, () => false, 200)
  assert.is(node.status().corruptions_healed, 0)
  assert.is(fileOf(node, sha256), file, 'the copy was not replaced')
  assert.is(node.blobs.temporary.size, 0, 'the refused copy was discarded')
  assert.is(decodeBlob(node.kv.get(blobKey(sha256)) as Uint8Array).corrupt, true)
  const refusal = node.scrubCtx.logs.find((entry) => entry.fields['code'] === 'bad_digest')
  assert.match(String(refusal?.fields['detail']), /SHA-256/)
  await stopScrubber(node)
})

test("a crash before a replacement's batch lands keeps the old copy, no stray file", async () => {
  const node = await startNode({ days: 30 })
  const body = pattern(FILE_BYTES, 11)
  const sha256 = await put(node, 'crash', body)
  const old = fileOf(node, sha256)
  node.blobs.corrupt(old, 5)
  const stream = memoryStream()
  stream.push(body)
  stream.end()
  node.kv.pause()
  const replacing = node.toStore({ kind: 'blob.replace', sha256, stream: stream.handle })
  await flush()
  // The new file is synced and its batch handed over, not yet durable: the node crashes now.
  assert.is(node.blobs.temporary.size, 1)
  const kv = node.kv.durableCopy()
  const blobs = node.blobs.afterCrash()
  const after = await startNode({ clock: node.clock, kv, blobs, days: 30 })
  assert.is(fileOf(after, sha256), old, 'the record still names the old file')
  assert.is(blobs.temporary.size, 0, 'recovery removed the uncommitted copy')
  assert.is((await get(after, 'crash')).read, 'corrupt')
  // The run that did not crash: its batch lands, and the new copy replaces the old.
  node.kv.resume()
  assert.equal(await replacing, { ok: true, value: { replaced: true } })
  await flush()
  sameBytes((await get(node, 'crash')).bytes, body)
  await stopScrubber(node)
  await stopScrubber(after)
})

test.run()
