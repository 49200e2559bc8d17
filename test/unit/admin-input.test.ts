/** @module Unit tests of http/admin/input.ts. Goal: everything the admin API accepts from clients
 * is validated before any actor sees it, with the code the Admin error table names, and a detail
 * that never echoes what was sent. Method: each pure parser with good input, then bad JSON, wrong
 * types, unknown fields, bad roles, bad usernames, bad max-keys and bad continuation tokens. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import type { ErrorCode, Result } from '../../protocol/errors.js'
import { encodeContinuationToken } from '../../http/s3/xml/s3-xml.js'
import {
  ADMIN_BODY_BYTES_MAX,
  isUserId,
  parseBearer,
  parseForce,
  parseJsonObject,
  parseListQuery,
  parseLogin,
  parseNewUser,
  parseUserChange,
} from '../../http/admin/input.js'

function bytes(text: string): Uint8Array {
  return new Uint8Array(Buffer.from(text, 'utf8'))
}

function refused<T>(result: Result<T>, code: ErrorCode, label: string): void {
  assert.is(result.ok, false, label)
  if (!result.ok) assert.is(result.code, code, label)
}

const SECRET = 'hunter2-secret-value'

test('JSON bodies: an object is accepted, anything else is invalid_data', () => {
  assert.equal(parseJsonObject(bytes('{"a":1}')), { ok: true, value: { a: 1 } })
  const bad: [string, Uint8Array][] = [
    ['empty', bytes('')],
    ['truncated', bytes('{"username":')],
    ['not JSON', bytes('username=root')],
    ['array', bytes('[]')],
    ['null', bytes('null')],
    ['string', bytes('"x"')],
    ['number', bytes('3')],
    ['invalid UTF-8', new Uint8Array([0x7b, 0xff, 0x7d])],
    ['too large', bytes(`{"a":"${'x'.repeat(ADMIN_BODY_BYTES_MAX)}"}`)],
  ]
  for (const [label, body] of bad) refused(parseJsonObject(body), 'invalid_data', label)
})

test('login: strings only, no unknown field; impossible credentials answer as wrong ones', () => {
  assert.equal(parseLogin({ username: 'root', password: 'pw' }), {
    ok: true,
    value: { username: 'root', password: 'pw' },
  })
  refused(parseLogin({ username: 'root' }), 'invalid_data', 'no password')
  refused(parseLogin({ password: 'pw' }), 'invalid_data', 'no username')
  refused(parseLogin({ username: 1, password: 'pw' }), 'invalid_data', 'number')
  refused(parseLogin({ username: 'root', password: null }), 'invalid_data', 'null')
  refused(parseLogin({ username: 'root', password: 'pw', x: 1 }), 'invalid_data', 'unknown')
  // No account can have these, so they fail exactly as an unknown account does (SPEC rule 1).
  refused(parseLogin({ username: 'a-b', password: 'pw' }), 'invalid_credentials', 'dash')
  refused(parseLogin({ username: 'x'.repeat(33), password: 'pw' }), 'invalid_credentials', '33')
  refused(parseLogin({ username: 'root', password: '' }), 'invalid_credentials', 'empty')
  const long = 'p'.repeat(1025)
  refused(parseLogin({ username: 'root', password: long }), 'invalid_credentials', 'long')
})

test('user creation: username rules are invalid_username, other fields invalid_data', () => {
  const good = { username: 'alice_01', password: SECRET, role: 'Writer' }
  assert.equal(parseNewUser(good), { ok: true, value: good })
  assert.ok(parseNewUser({ ...good, username: 'abc' }).ok)
  assert.ok(parseNewUser({ ...good, username: 'x'.repeat(32) }).ok)
  const badNames = ['ab', 'x'.repeat(33), 'al-ice', 'ålice', 'al ice', 'al.ice', '', 'ab\u0000c']
  for (const username of badNames) {
    refused(parseNewUser({ ...good, username }), 'invalid_username', JSON.stringify(username))
  }
  const bad: [string, Record<string, unknown>][] = [
    ['username a number', { ...good, username: 123 }],
    ['no username', { password: SECRET, role: 'Reader' }],
    ['no password', { username: 'alice', role: 'Reader' }],
    ['password a number', { ...good, password: 12345678 }],
    ['empty password', { ...good, password: '' }],
    ['password over 1024 bytes', { ...good, password: 'é'.repeat(513) }],
    ['no role', { username: 'alice', password: SECRET }],
    ['unknown role', { ...good, role: 'Admin' }],
    ['role in lower case', { ...good, role: 'reader' }],
    ['role a number', { ...good, role: 1 }],
    ['unknown field', { ...good, is_active: true }],
    [
      'prototype key',
      JSON.parse('{"__proto__": {}, "username": "alice"}') as Record<string, unknown>,
    ],
  ]
  for (const [label, body] of bad) refused(parseNewUser(body), 'invalid_data', label)
})

test('user update: optional fields, at least one, typed, nothing unknown', () => {
  assert.equal(parseUserChange({ is_active: false }), { ok: true, value: { isActive: false } })
  assert.equal(parseUserChange({ role: 'Reader', password: 'pw' }), {
    ok: true,
    value: { role: 'Reader', password: 'pw' },
  })
  const bad: [string, Record<string, unknown>][] = [
    ['empty', {}],
    ['is_active a string', { is_active: 'false' }],
    ['is_active null', { is_active: null }],
    ['unknown role', { role: 'Root' }],
    ['empty password', { password: '' }],
    ['unknown field', { role: 'Reader', username: 'bob' }],
    ['camel case', { isActive: true }],
  ]
  for (const [label, body] of bad) refused(parseUserChange(body), 'invalid_data', label)
})

test('details name the field to correct, never the value sent', () => {
  const results = [
    parseNewUser({ username: 'bad-' + SECRET, password: SECRET, role: 'Writer' }),
    parseNewUser({ username: 'alice', password: SECRET, role: SECRET }),
    parseNewUser({ username: 'alice', password: SECRET, role: 'Writer', [SECRET]: 1 }),
    parseUserChange({ [SECRET]: 1 }),
    parseLogin({ username: 'a-' + SECRET, password: SECRET }),
  ]
  for (const result of results) {
    assert.is(result.ok, false)
    if (!result.ok) assert.not.match(result.detail, SECRET)
  }
})

test('bearer header: missing or malformed is unauthorized', () => {
  assert.equal(parseBearer('Bearer abc.def-_.ghi'), { ok: true, value: 'abc.def-_.ghi' })
  assert.equal(parseBearer('bearer abc'), { ok: true, value: 'abc' })
  const bad = [undefined, '', 'Bearer', 'Bearer ', 'Basic cm9vdDpwdw==', 'Bearer a b', 'abc']
  for (const header of [...bad, 'Bearer ' + 'a'.repeat(9000), 'Bearer a\u00e9']) {
    refused(parseBearer(header), 'unauthorized', String(header).slice(0, 20))
  }
})

test('user ids are lower-case version 4 UUIDs', () => {
  assert.ok(isUserId('0f8fad5b-d9cb-469f-a165-70867728950e'))
  assert.not.ok(isUserId('0F8FAD5B-D9CB-469F-A165-70867728950E'))
  assert.not.ok(isUserId('0f8fad5b-d9cb-169f-a165-70867728950e'))
  assert.not.ok(isUserId('0f8fad5bd9cb469fa16570867728950e'))
  assert.not.ok(isUserId('../etc'))
  assert.not.ok(isUserId(''))
})

test('force: absent, true or false; anything else is invalid_data', () => {
  assert.equal(parseForce(new URLSearchParams('')), { ok: true, value: false })
  assert.equal(parseForce(new URLSearchParams('force=true')), { ok: true, value: true })
  assert.equal(parseForce(new URLSearchParams('force=false')), { ok: true, value: false })
  for (const query of ['force=', 'force=1', 'force=TRUE', 'force=yes', 'force=true&force=true']) {
    refused(parseForce(new URLSearchParams(query)), 'invalid_data', query)
  }
})

test('listing query: defaults, clamped max-keys, continuation tokens round-trip', () => {
  assert.equal(parseListQuery(new URLSearchParams('')), {
    ok: true,
    value: { prefix: '', maxKeys: 1000, after: '' },
  })
  const token = encodeContinuationToken('photos/2024/ü.jpg')
  const query = new URLSearchParams({
    prefix: 'photos/',
    'max-keys': '0',
    'continuation-token': token,
  })
  assert.equal(parseListQuery(query), {
    ok: true,
    value: { prefix: 'photos/', maxKeys: 0, after: 'photos/2024/ü.jpg' },
  })
  const clamped = parseListQuery(new URLSearchParams('max-keys=5000'))
  assert.ok(clamped.ok && clamped.value.maxKeys === 1000)
  const huge = parseListQuery(new URLSearchParams('max-keys=9999999999'))
  assert.ok(huge.ok && huge.value.maxKeys === 1000)
})

test('listing query: bad max-keys, tokens and prefixes are invalid_data', () => {
  const badMaxKeys = ['', '-1', '1.5', '1e3', 'ten', ' 5', '0x10', '99999999999', '+5']
  for (const value of badMaxKeys) {
    refused(parseListQuery(new URLSearchParams({ 'max-keys': value })), 'invalid_data', value)
  }
  const good = encodeContinuationToken('key')
  const badTokens = ['', '!!!', 'a', good + '=', good.slice(0, -1) + '*', 'x'.repeat(2000)]
  // Valid base64url, but not a token of ours (no version byte), and invalid UTF-8.
  badTokens.push(Buffer.from('key').toString('base64url'))
  badTokens.push(Buffer.from([0x31, 0xff, 0xfe]).toString('base64url'))
  for (const token of badTokens) {
    const query = new URLSearchParams({ 'continuation-token': token })
    refused(parseListQuery(query), 'invalid_data', token.slice(0, 20))
  }
  refused(parseListQuery(new URLSearchParams('max-keys=1&max-keys=2')), 'invalid_data', 'twice')
  const longPrefix = new URLSearchParams({ prefix: 'p'.repeat(1025) })
  refused(parseListQuery(longPrefix), 'invalid_data', 'long prefix')
})

test.run()
