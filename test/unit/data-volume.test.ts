// Goal: what the data volume holds back follows its size (a small volume keeps most of itself for
// objects), the reserve covers the room the metadata database needs to open, and the reserve is
// let go at every start of the node before the database opens and written back only once it is
// open (a store that starts again on the open database keeps it), and
// when the database meets no space it gets the reserve, which is not written back at once, also
// when another shard of the store (which never writes it) let it go.
// Method: the sizing functions on a few volume sizes; DataVolume on a temp dir of this machine's
// disk, with a reserve file left as a previous run would leave it.
import { existsSync } from 'node:fs'
import { mkdtemp, rm, stat, statfs, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import {
  createVolumeMemory,
  DataVolume,
  floorBytes,
  FULL_ROOM_BYTES,
  memtableBytes,
  objectRoomBytes,
  RESERVE_FILE,
  releaseReserveToOpen,
  reserveBytes,
} from '../../runtime/data-volume.js'
import {
  METADATA_MEMTABLE_BYTES_MAX,
  memtablesMaxBytes,
  openRoomBytes,
} from '../../runtime/rocks-kv.js'
import { pollUntil } from '../support/wait.js'

const MIB = 1024 * 1024
const QUIET = { info: () => undefined, warn: () => undefined }

test('a 64 MiB volume takes at least 16 objects of 1 MiB beside what it holds back', () => {
  const size = 64 * MIB
  // Nothing held yet: the rule counts the reserve as held all the same.
  const room = objectRoomBytes(size, size, 0)
  assert.ok(room - FULL_ROOM_BYTES >= 16 * MIB, `room for ${room / MIB} MiB`)
  assert.is(memtableBytes(size), 4 * MIB)
})

test("the floor covers the memtables' most, the reserve the room to open; both bounded", () => {
  for (const size of [64 * MIB, 96 * MIB, 512 * MIB, 64 * 1024 * MIB, 16 * 1024 * 1024 * MIB]) {
    const budget = memtableBytes(size)
    assert.ok(budget <= METADATA_MEMTABLE_BYTES_MAX && budget <= size / 16, `budget at ${size}`)
    assert.ok(floorBytes(size) >= memtablesMaxBytes(budget))
    assert.ok(floorBytes(size) <= 256 * MIB)
    assert.ok(reserveBytes(size) >= openRoomBytes(budget))
    assert.ok(reserveBytes(size) < openRoomBytes(budget) + MIB)
  }
})

test('the reserve goes at start and comes back only once the database is open', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-volume-'))
  const reserve = join(dir, RESERVE_FILE)
  try {
    await writeFile(reserve, new Uint8Array(MIB))
    await releaseReserveToOpen(dir)
    assert.not.ok(existsSync(reserve), 'the reserve is gone before the database opens')
    const volume = await DataVolume.open(dir, QUIET)
    try {
      // Two looks at the volume (a second apart) write nothing while the database opens.
      await new Promise((resolve) => setTimeout(resolve, 2_200))
      assert.not.ok(existsSync(reserve), 'no reserve while the database opens')
      volume.databaseOpened()
      const stats = await statfs(dir)
      const expected = reserveBytes(stats.blocks * stats.bsize)
      const written = async (): Promise<boolean> => (await stat(reserve)).size === expected
      assert.ok(await pollUntil(written, 10_000, 50), 'the reserve is written back')
    } finally {
      await volume.close()
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
})

test('a store that starts again on the open database keeps the reserve it finds', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-volume-'))
  const reserve = join(dir, RESERVE_FILE)
  try {
    const first = await DataVolume.open(dir, QUIET)
    first.databaseOpened()
    const stats = await statfs(dir)
    const expected = reserveBytes(stats.blocks * stats.bsize)
    const written = async (): Promise<boolean> => (await stat(reserve)).size === expected
    assert.ok(await pollUntil(written, 10_000, 50), 'the reserve is written')
    await first.close()
    const before = await stat(reserve)
    const again = await DataVolume.open(dir, QUIET)
    try {
      again.databaseOpened()
      await new Promise((resolve) => setTimeout(resolve, 1_200))
      const after = await stat(reserve)
      assert.equal([after.ino, after.mtimeMs], [before.ino, before.mtimeMs], 'not written again')
      assert.ok(await written())
    } finally {
      await again.close()
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
})

test('the reserve the database took is not written back at the next looks', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-volume-'))
  const reserve = join(dir, RESERVE_FILE)
  try {
    const volume = await DataVolume.open(dir, QUIET)
    try {
      volume.databaseOpened()
      const stats = await statfs(dir)
      const expected = reserveBytes(stats.blocks * stats.bsize)
      const written = async (): Promise<boolean> => (await stat(reserve)).size === expected
      assert.ok(await pollUntil(written, 10_000, 50), 'the reserve is written')
      // RocksDB refuses every write until it resumes, each refusal a call like this one.
      volume.databaseExhausted()
      assert.ok(await pollUntil(() => !existsSync(reserve), 5_000, 20), 'the reserve is let go')
      await new Promise((resolve) => setTimeout(resolve, 2_200))
      assert.not.ok(existsSync(reserve), 'not written back while the database resumes')
    } finally {
      await volume.close()
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
})

test('a shard without the reserve lets it go for the database; it stays gone a while', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-volume-'))
  const reserve = join(dir, RESERVE_FILE)
  const written = createVolumeMemory()
  try {
    const keeper = await DataVolume.open(dir, QUIET, { keepsReserve: true, written })
    const other = await DataVolume.open(dir, QUIET, { keepsReserve: false, written })
    try {
      other.databaseOpened()
      keeper.databaseOpened()
      const stats = await statfs(dir)
      const expected = reserveBytes(stats.blocks * stats.bsize)
      const whole = async (): Promise<boolean> => (await stat(reserve)).size === expected
      assert.ok(await pollUntil(whole, 10_000, 50), 'the keeper writes the reserve')
      // The other shard's look has seen it whole; its write was the one the database refused.
      await new Promise((resolve) => setTimeout(resolve, 1_200))
      other.databaseExhausted()
      assert.ok(await pollUntil(() => !existsSync(reserve), 5_000, 20), 'the reserve is let go')
      await new Promise((resolve) => setTimeout(resolve, 2_200))
      assert.not.ok(existsSync(reserve), 'the keeper holds off while the database resumes')
    } finally {
      await other.close()
      await keeper.close()
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
})

test.run()
