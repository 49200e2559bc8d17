/** @module Unit tests of http/s3/meta-text.ts. Goal: a metadata value reads back as it was sent:
 * UTF-8 bytes in, the same bytes out; RFC 2047 words stored as sent; only a value no header can
 * carry goes out as an RFC 2047 word. Method: header values as node:http gives them (latin1 text,
 * a character per byte) through metaValueFromHeader, and back through metaValueToHeader. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { metaValueFromHeader, metaValueToHeader } from '../../http/s3/meta-text.js'

/** A header value as node:http presents the bytes of `text` encoded as `encoding`. */
function received(text: string, encoding: BufferEncoding): string {
  return Buffer.from(text, encoding).toString('latin1')
}

test('UTF-8 bytes are stored as their text and sent back as the same bytes', () => {
  for (const value of ['café ☕', 'Größe', '日本語', '🙂 emoji']) {
    const raw = received(value, 'utf8')
    const stored = metaValueFromHeader(raw)
    assert.is(stored, value)
    assert.is(metaValueToHeader(stored), raw)
  }
})

test('RFC 2047 words and ASCII are stored and returned as sent', () => {
  const encoded = `=?UTF-8?B?${Buffer.from('thé').toString('base64')}?=`
  assert.is(metaValueFromHeader(encoded), encoded)
  assert.is(metaValueToHeader(encoded), encoded)
  assert.is(metaValueToHeader(metaValueFromHeader('plain\tascii')), 'plain\tascii')
})

test('bytes that are not UTF-8 are read as latin1', () => {
  assert.is(metaValueFromHeader(received('café', 'latin1')), 'café')
})

test('a value no header can carry goes out as one RFC 2047 word', () => {
  const value = '\u0004line\nbreak'
  assert.is(metaValueToHeader(value), `=?UTF-8?B?${Buffer.from(value).toString('base64')}?=`)
})

test.run()
