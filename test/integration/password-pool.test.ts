/** Goal: the password pool hashes and verifies with argon2id off the caller's thread and stays
 * bounded: past PASSWORD_QUEUE_MAX waiting tasks a task answers `busy` at once instead of
 * queueing, and the pool still serves afterwards. Method: a real pool (piscina threads) in this
 * process; a burst larger than the queue bound. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { randomBytes } from 'node:crypto'
import { PASSWORD_QUEUE_MAX, PASSWORD_THREADS_MAX } from '../../runtime/knobs.js'
import { PasswordPool } from '../../runtime/password-pool.js'

/** Far above what any burst here takes on a busy machine: counts must not depend on its speed. */
const pool = new PasswordPool(10 * 60_000)

test.after(async () => {
  await pool.close()
})

test('hash, then verify: the password matches, a wrong one or a bad hash does not', async () => {
  const hashed = await pool.hash('correct horse', new Uint8Array(randomBytes(16)))
  assert.ok(hashed.ok)
  if (!hashed.ok) return
  assert.match(hashed.value, /^\$argon2id\$v=19\$m=19456,p=1,t=2\$/)
  assert.equal(await pool.verify(hashed.value, 'correct horse'), { ok: true, value: true })
  assert.equal(await pool.verify(hashed.value, 'wrong horse'), { ok: true, value: false })
  assert.equal(await pool.verify('not-a-hash', 'correct horse'), { ok: true, value: false })
})

test('a burst past the queue bound answers busy at once; the pool serves afterwards', async () => {
  const burst = PASSWORD_QUEUE_MAX + PASSWORD_THREADS_MAX + 16
  const salt = new Uint8Array(randomBytes(16))
  const results = await Promise.all(
    Array.from({ length: burst }, (_, index) => pool.hash(`password-${index}`, salt)),
  )
  const busy = results.filter((result) => !result.ok && result.code === 'busy').length
  const hashed = results.filter((result) => result.ok).length
  assert.is(busy + hashed, burst)
  assert.ok(busy >= 16, `only ${busy} of ${burst} answered busy`)
  assert.ok(hashed >= PASSWORD_QUEUE_MAX, `only ${hashed} hashed`)
  const after = await pool.hash('after the burst', salt)
  assert.ok(after.ok)
})

test('a late task answers timeout, and its thread is not terminated mid-hash', async () => {
  // Aborting a running argon2 task terminates its thread, which aborts this whole process.
  const hasty = new PasswordPool(1)
  try {
    const salt = new Uint8Array(randomBytes(16))
    const answers = await Promise.all(Array.from({ length: 4 }, () => hasty.hash('slow', salt)))
    for (const answer of answers) assert.equal(answer.ok ? 'ok' : answer.code, 'timeout')
    const after = await pool.hash('the process is still here', salt)
    assert.ok(after.ok)
  } finally {
    await hasty.close()
  }
})

test.run()
