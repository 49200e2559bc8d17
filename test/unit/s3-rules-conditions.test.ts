/** Goal: a write's conditions decide as RFC 7232 section 6 orders them for a method that changes
 * state, with Amazon S3's 404 for If-Match on an absent key, and the one header parser serves
 * reads, copy sources and writes alike. Method: protocol/s3-rules/conditions.ts's
 * evaluateWriteConditions and etagListMatches, and http/s3/conditions.ts's parser, called
 * directly on fixed values. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import {
  etagListMatches,
  evaluateConditions,
  evaluateWriteConditions,
  type WriteConditions,
} from '../../protocol/s3-rules/conditions.js'
import { conditionsFrom, writeConditions } from '../../http/s3/conditions.js'

const current = { etag: '"abc"', lastModifiedMs: 1_700_000_000_500 }
const second = 1_700_000_000_000

const write = (conditions: WriteConditions) => evaluateWriteConditions(current, conditions)
/** The same write to a key without a current object. */
const absent = (conditions: WriteConditions) => evaluateWriteConditions(undefined, conditions)

test('etagListMatches: *, lists, quotes, strong and weak comparison', () => {
  assert.ok(etagListMatches('*', '"abc"'))
  assert.ok(etagListMatches('"abc"', '"abc"'))
  assert.ok(etagListMatches('abc', '"abc"'))
  assert.ok(etagListMatches(' "x" ,"abc"', '"abc"'))
  assert.not.ok(etagListMatches('"x", "y"', '"abc"'))
  assert.not.ok(etagListMatches('"ab"', '"abc"'))
  // RFC 7232 section 2.3.2: a weak tag never matches strongly, and matches weakly.
  assert.not.ok(etagListMatches('W/"abc"', '"abc"'))
  assert.not.ok(etagListMatches('W/"abc"', '"abc"', 'strong'))
  assert.ok(etagListMatches('W/"abc"', '"abc"', 'weak'))
  assert.ok(etagListMatches('"x", W/"abc"', '"abc"', 'weak'))
})

test('evaluateWriteConditions: If-Match with * and lists, 404 without an object', () => {
  assert.is(write({}), null)
  assert.is(write({ ifMatch: '"abc"' }), null)
  assert.is(write({ ifMatch: '"x", "abc"' }), null)
  assert.is(write({ ifMatch: '*' }), null)
  assert.is(write({ ifMatch: '"x"' }), 'precondition_failed')
  assert.is(write({ ifMatch: 'W/"abc"' }), 'precondition_failed')
  assert.is(absent({ ifMatch: '*' }), 'no_such_key')
  assert.is(absent({ ifMatch: '"abc"' }), 'no_such_key')
})

test('evaluateWriteConditions: If-None-Match with * and lists, weakly compared', () => {
  assert.is(write({ ifNoneMatch: '*' }), 'precondition_failed')
  assert.is(absent({ ifNoneMatch: '*' }), null)
  assert.is(write({ ifNoneMatch: '"abc"' }), 'precondition_failed')
  assert.is(write({ ifNoneMatch: 'W/"abc"' }), 'precondition_failed')
  assert.is(write({ ifNoneMatch: '"x", "abc"' }), 'precondition_failed')
  assert.is(write({ ifNoneMatch: '"x", "y"' }), null)
  assert.is(absent({ ifNoneMatch: '"abc"' }), null)
  // A write's failed If-None-Match is 412, never a read's 304.
  assert.is(write({ ifMatch: '"abc"', ifNoneMatch: '"abc"' }), 'precondition_failed')
})

test('evaluateWriteConditions: If-Unmodified-Since unless If-Match, If-Modified-Since not', () => {
  assert.is(write({ ifUnmodifiedSinceMs: second }), null)
  assert.is(write({ ifUnmodifiedSinceMs: second - 1000 }), 'precondition_failed')
  // If-Match, when present, decides alone (RFC 7232 section 6, step 2).
  assert.is(write({ ifMatch: '"abc"', ifUnmodifiedSinceMs: second - 1000 }), null)
  // No object, no modification date: the condition does not apply (section 3.4).
  assert.is(absent({ ifUnmodifiedSinceMs: second - 1000 }), null)
  // Section 3.3: only GET and HEAD evaluate If-Modified-Since; a read would answer 304 here.
  assert.is(evaluateConditions(current, { ifModifiedSinceMs: second }, 'read'), 'not_modified')
  assert.is(write({ ifModifiedSinceMs: second }), null)
  assert.is(
    write({ ifNoneMatch: '"x"', ifUnmodifiedSinceMs: second - 1000 }),
    'precondition_failed',
  )
})

test('evaluateConditions for GET and HEAD: the table of Amazon S3 GetObject', () => {
  const rows: [string, WriteConditions, string | null][] = [
    ['none', {}, null],
    ['If-Match matches', { ifMatch: '"abc"' }, null],
    ['If-Match differs', { ifMatch: '"x"' }, 'precondition_failed'],
    ['If-None-Match matches', { ifNoneMatch: '"abc"' }, 'not_modified'],
    ['If-None-Match differs', { ifNoneMatch: '"x"' }, null],
    ['If-Modified-Since, not modified', { ifModifiedSinceMs: second }, 'not_modified'],
    ['If-Modified-Since, modified', { ifModifiedSinceMs: second - 1000 }, null],
    ['If-Unmodified-Since, not modified', { ifUnmodifiedSinceMs: second }, null],
    [
      'If-Unmodified-Since, modified',
      { ifUnmodifiedSinceMs: second - 1000 },
      'precondition_failed',
    ],
    // S3: If-Match true and If-Unmodified-Since false answers 200.
    ['If-Match over If-Unmodified-Since', { ifMatch: '"abc"', ifUnmodifiedSinceMs: 0 }, null],
    // S3: If-None-Match false and If-Modified-Since true answers 304.
    [
      'If-None-Match over If-Modified-Since',
      { ifNoneMatch: '"abc"', ifModifiedSinceMs: 0 },
      'not_modified',
    ],
    [
      'If-Match fails before If-None-Match',
      { ifMatch: '"x"', ifNoneMatch: '"abc"' },
      'precondition_failed',
    ],
  ]
  for (const [name, conditions, code] of rows) {
    assert.is(evaluateConditions(current, conditions, 'read'), code, name)
  }
})

test('one parser: reads and copy sources keep every header, writes drop If-Modified-Since', () => {
  const date = 'Tue, 14 Nov 2023 22:13:20 GMT'
  const headers = {
    'if-match': '"a", "b"',
    'if-none-match': 'W/"c"',
    'if-modified-since': date,
    'if-unmodified-since': date,
    'x-amz-copy-source-if-match': '"s"',
    'x-amz-copy-source-if-unmodified-since': 'not a date',
  }
  assert.equal(conditionsFrom(headers, ''), {
    ifMatch: '"a", "b"',
    ifNoneMatch: 'W/"c"',
    ifModifiedSinceMs: second,
    ifUnmodifiedSinceMs: second,
  })
  // A date that does not parse is ignored (RFC 7232 section 3).
  assert.equal(conditionsFrom(headers, 'x-amz-copy-source-'), { ifMatch: '"s"' })
  assert.equal(writeConditions(headers), {
    ifMatch: '"a", "b"',
    ifNoneMatch: 'W/"c"',
    ifUnmodifiedSinceMs: second,
  })
  assert.is(writeConditions({ 'if-modified-since': date }), null)
  assert.is(writeConditions({}), null)
})

test.run()
