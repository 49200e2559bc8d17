/** Goal: object lock's rules as Amazon S3 applies them: a legal hold and a COMPLIANCE retention
 * refuse every removal of a version, GOVERNANCE one that does not bypass it, an expired retention
 * none; a retention may be extended but not shortened, removed or weakened unless governance is
 * bypassed; a default retention counts whole days or calendar years from the version's creation;
 * lock headers come as S3 takes them (a mode with a date in the future, ON or OFF), and a
 * configuration has Days or Years, positive and bounded. The XML of the configuration, a retention
 * and a legal hold reads back what it wrote. Method: the pure functions over a table of cases. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import {
  defaultRetentionFor,
  lockFromHeaders,
  mayChangeRetention,
  mayDeleteVersion,
  validateObjectLockConfiguration,
  type Retention,
} from '../../protocol/s3-rules/object-lock.js'
import {
  legalHoldXml,
  objectLockConfigurationXml,
  parseLegalHold,
  parseObjectLockConfiguration,
  parseRetention,
  retentionXml,
} from '../../http/s3/xml/object-lock-xml.js'

const NOW = Date.parse('2026-06-01T12:00:00Z')
const DAY = 24 * 60 * 60 * 1000
const bytes = (text: string): Uint8Array => new TextEncoder().encode(text)

test('who may remove a version: legal hold, compliance, governance and its bypass, expiry', () => {
  const governance: Retention = { mode: 'GOVERNANCE', untilMs: NOW + DAY }
  const compliance: Retention = { mode: 'COMPLIANCE', untilMs: NOW + DAY }
  const cases: [string, Retention | null, boolean, boolean, boolean][] = [
    ['nothing', null, false, false, true],
    ['governance', governance, false, false, false],
    ['governance bypassed', governance, false, true, true],
    ['compliance', compliance, false, true, false],
    ['compliance expired', { ...compliance, untilMs: NOW }, false, false, true],
    ['legal hold', null, true, true, false],
    ['legal hold, retention expired', { ...compliance, untilMs: NOW - 1 }, true, true, false],
  ]
  for (const [name, retention, legalHold, bypass, allowed] of cases) {
    const verdict = mayDeleteVersion({ retention, legalHold }, NOW, bypass)
    assert.is(verdict.ok, allowed, name)
    if (!verdict.ok) assert.is(verdict.code, 'access_denied', name)
  }
})

test('a retention may be extended, not shortened, removed or weakened without a bypass', () => {
  const compliance: Retention = { mode: 'COMPLIANCE', untilMs: NOW + DAY }
  const governance: Retention = { mode: 'GOVERNANCE', untilMs: NOW + DAY }
  const later = NOW + 2 * DAY
  const sooner = NOW + DAY / 2
  assert.ok(mayChangeRetention(compliance, { mode: 'COMPLIANCE', untilMs: later }, NOW, false).ok)
  assert.not.ok(mayChangeRetention(compliance, { ...compliance, untilMs: sooner }, NOW, true).ok)
  assert.not.ok(mayChangeRetention(compliance, { ...governance, untilMs: later }, NOW, true).ok)
  assert.not.ok(mayChangeRetention(compliance, null, NOW, true).ok)
  assert.ok(mayChangeRetention(governance, { ...compliance, untilMs: later }, NOW, false).ok)
  assert.not.ok(mayChangeRetention(governance, null, NOW, false).ok)
  assert.ok(mayChangeRetention(governance, null, NOW, true).ok)
  assert.ok(mayChangeRetention({ ...compliance, untilMs: NOW - 1 }, null, NOW, false).ok)
})

test('default retention: whole days, or calendar years in UTC', () => {
  const days = {
    enabled: true as const,
    defaultRetention: { mode: 'GOVERNANCE' as const, days: 30, years: null },
  }
  assert.equal(defaultRetentionFor(days, NOW), { mode: 'GOVERNANCE', untilMs: NOW + 30 * DAY })
  const years = {
    enabled: true as const,
    defaultRetention: { mode: 'COMPLIANCE' as const, days: null, years: 2 },
  }
  assert.equal(defaultRetentionFor(years, NOW), {
    mode: 'COMPLIANCE',
    untilMs: Date.parse('2028-06-01T12:00:00Z'),
  })
  assert.is(defaultRetentionFor({ enabled: true, defaultRetention: null }, NOW), null)
  assert.is(defaultRetentionFor(null, NOW), null)
})

test('lock headers: a mode with a future date, a legal hold ON or OFF; else 400', () => {
  const until = new Date(NOW + DAY).toISOString()
  const set = lockFromHeaders(
    {
      'x-amz-object-lock-mode': 'COMPLIANCE',
      'x-amz-object-lock-retain-until-date': until,
      'x-amz-object-lock-legal-hold': 'ON',
    },
    NOW,
  )
  assert.equal(set, {
    ok: true,
    value: { retention: { mode: 'COMPLIANCE', untilMs: NOW + DAY }, legalHold: true },
  })
  assert.equal(lockFromHeaders({}, NOW), { ok: true, value: null })
  const refused: Record<string, string>[] = [
    { 'x-amz-object-lock-mode': 'GOVERNANCE' },
    { 'x-amz-object-lock-retain-until-date': until },
    { 'x-amz-object-lock-mode': 'FOREVER', 'x-amz-object-lock-retain-until-date': until },
    {
      'x-amz-object-lock-mode': 'GOVERNANCE',
      'x-amz-object-lock-retain-until-date': new Date(NOW - DAY).toISOString(),
    },
    { 'x-amz-object-lock-legal-hold': 'maybe' },
  ]
  for (const headers of refused) {
    const read = lockFromHeaders(headers, NOW)
    assert.is(read.ok, false, JSON.stringify(headers))
    if (!read.ok) assert.is(read.code, 'invalid_argument', JSON.stringify(headers))
  }
})

test('configurations: Days or Years, positive and bounded; the XML reads back', () => {
  const rule = (days: number | null, years: number | null) => ({
    enabled: true as const,
    defaultRetention: { mode: 'GOVERNANCE' as const, days, years },
  })
  assert.ok(validateObjectLockConfiguration(rule(1, null)).ok)
  assert.ok(validateObjectLockConfiguration(rule(null, 100)).ok)
  for (const [days, years] of [
    [null, null],
    [1, 1],
    [0, null],
    [null, 101],
    [36_501, null],
  ]) {
    assert.not.ok(
      validateObjectLockConfiguration(rule(days ?? null, years ?? null)).ok,
      `${days} ${years}`,
    )
  }
  const written = objectLockConfigurationXml(rule(7, null))
  assert.equal(parseObjectLockConfiguration(bytes(written)), { ok: true, value: rule(7, null) })
  const bare =
    '<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled>' +
    '</ObjectLockConfiguration>'
  assert.equal(parseObjectLockConfiguration(bytes(bare)), {
    ok: true,
    value: { enabled: true, defaultRetention: null },
  })
  const retention = retentionXml({ mode: 'COMPLIANCE', untilMs: NOW })
  assert.equal(parseRetention(bytes(retention)), {
    ok: true,
    value: { mode: 'COMPLIANCE', until: new Date(NOW).toISOString() },
  })
  assert.equal(parseLegalHold(bytes(legalHoldXml(true))), { ok: true, value: true })
  assert.equal(parseLegalHold(bytes(legalHoldXml(false))), { ok: true, value: false })
})

test.run()
