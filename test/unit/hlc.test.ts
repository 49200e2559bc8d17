/** Goal: the hybrid logical clock issues ever-increasing stamps however the wall clock moves,
 * follows causality across nodes, refuses stamps far in the future, and writes strings that sort
 * as the clock does. Method: drive HlcClock with a wall clock the test sets by hand. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import {
  compareHlc,
  HLC_MAX_AHEAD_MS,
  HlcClock,
  hlcString,
  nodeTag,
  parseHlc,
  ZERO_HLC,
  type Hlc,
} from '../../protocol/hlc.js'

function wallClock(startMs: number): { nowMs: number; now: () => number } {
  const clock = { nowMs: startMs, now: () => clock.nowMs }
  return clock
}

function assertIncreasing(stamps: Hlc[]): void {
  for (let i = 1; i < stamps.length; i++) {
    assert.ok(compareHlc(stamps[i - 1] as Hlc, stamps[i] as Hlc) < 0, `stamp ${i} not greater`)
  }
}

test('stamps increase while the wall clock stands still and when it goes backwards', () => {
  const wall = wallClock(1_700_000_000_000)
  const clock = new HlcClock(7, wall.now)
  const stamps = [clock.tick(), clock.tick()]
  wall.nowMs -= 5_000
  stamps.push(clock.tick(), clock.tick())
  wall.nowMs += 10_000
  stamps.push(clock.tick())
  assertIncreasing(stamps)
  assert.is(stamps[3]?.wallMs, 1_700_000_000_000, 'a clock going back keeps the highest ms')
  assert.is(stamps[3]?.logical, 3)
  assert.equal(stamps[4], { wallMs: 1_700_000_005_000, logical: 0, node: 7 })
})

test('observe moves the clock past a stamp from a node whose clock is ahead', () => {
  const wall = wallClock(1_000_000)
  const clock = new HlcClock(1, wall.now)
  const remote = { wallMs: 1_030_000, logical: 4, node: 2 }
  assert.ok(clock.observe(remote))
  const next = clock.tick()
  assert.ok(compareHlc(remote, next) < 0)
  assert.equal(next, { wallMs: 1_030_000, logical: 6, node: 1 })
  // Once the wall clock passes the remote's, stamps follow the wall clock again.
  wall.nowMs = 1_040_000
  assert.equal(clock.tick(), { wallMs: 1_040_000, logical: 0, node: 1 })
})

test('a stamp more than 60 s ahead is refused and leaves the clock unchanged', () => {
  const wall = wallClock(1_000_000)
  const clock = new HlcClock(1, wall.now)
  const before = clock.tick()
  assert.not.ok(clock.observe({ wallMs: 1_000_000 + HLC_MAX_AHEAD_MS + 1, logical: 0, node: 2 }))
  assert.equal(clock.current(), before)
  assert.ok(clock.observe({ wallMs: 1_000_000 + HLC_MAX_AHEAD_MS, logical: 0, node: 2 }))
  assert.is(clock.current().wallMs, 1_000_000 + HLC_MAX_AHEAD_MS)
})

test('a full logical counter moves the stamp to the next ms', () => {
  const wall = wallClock(5_000)
  const clock = new HlcClock(1, wall.now)
  assert.ok(clock.observe({ wallMs: 5_000, logical: 0xfffe, node: 9 }))
  const stamp = clock.tick()
  assert.equal(stamp, { wallMs: 5_001, logical: 0, node: 1 })
  assert.equal(clock.tick(), { wallMs: 5_001, logical: 1, node: 1 })
})

test('strings sort as compareHlc orders, and parse back', () => {
  const stamps: Hlc[] = [ZERO_HLC]
  for (const wallMs of [0, 1, 255, 256, 1_700_000_000_000, 2 ** 48 - 1]) {
    for (const logical of [0, 1, 0xffff]) {
      for (const node of [0, 1, 0xffff_ffff]) stamps.push({ wallMs, logical, node })
    }
  }
  const byClock = [...stamps].sort(compareHlc).map(hlcString)
  const byString = stamps.map(hlcString).sort()
  assert.equal(byString, byClock)
  for (const stamp of stamps) {
    const text = hlcString(stamp)
    assert.match(text, /^[0-9a-f]{24}$/)
    assert.equal(parseHlc(text), { ...stamp })
  }
})

test('parseHlc refuses anything but 24 lowercase hex characters', () => {
  for (const bad of ['', '0'.repeat(23), '0'.repeat(25), 'A'.repeat(24), 'g'.repeat(24)]) {
    assert.is(parseHlc(bad), null, bad)
  }
})

test('nodeTag is the first 4 bytes of SHA-256 of the id', () => {
  // SHA-256("n1") starts 676b8bb8: fixed here, since stamps written to disk carry the tag.
  assert.is(nodeTag('n1'), 0x676b8bb8)
  assert.is.not(nodeTag('n1'), nodeTag('n2'))
})

test.run()
