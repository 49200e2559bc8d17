/** @module User metadata beyond ASCII: a value reads back as it was sent. node:http gives header
 * values as latin1 text (one character per byte); the bytes are read as UTF-8 (as latin1 when
 * they are not UTF-8) and stored as that text, and a GET or HEAD writes the text's UTF-8 bytes
 * back, so UTF-8 sent is UTF-8 returned, byte for byte. A value sent as RFC 2047 encoded words
 * (`=?UTF-8?B?...?=`) is stored and returned as those words, as sent. Only a value no header can
 * carry (a control character, which a form upload's field may hold) is returned as one RFC 2047
 * word, as S3 returns it. */

const utf8 = new TextDecoder('utf-8', { fatal: true })

/** Characters node:http refuses in a header value: of latin1, it sends tab and 0x20 to 0xff but
 * DEL. */
const NOT_IN_HEADER = /[\u0000-\u0008\u000a-\u001f\u007f]/

/** The text of a received header value: its bytes as UTF-8 when they are UTF-8, else as latin1. */
export function metaValueFromHeader(raw: string): string {
  if (!/[\u0080-\u00ff]/.test(raw)) return raw
  try {
    return utf8.decode(Buffer.from(raw, 'latin1'))
  } catch {
    return raw
  }
}

/** The header value (latin1 text, a character per byte) that sends `value`'s UTF-8 bytes. */
export function metaValueToHeader(value: string): string {
  if (NOT_IN_HEADER.test(value)) {
    return `=?UTF-8?B?${Buffer.from(value, 'utf8').toString('base64')}?=`
  }
  if (!/[^\u0000-\u007f]/.test(value)) return value
  return Buffer.from(value, 'utf8').toString('latin1')
}
