/** @module User metadata beyond ASCII, as Amazon S3 treats it. node:http gives header values as
 * latin1 text (one character per byte); S3 reads the bytes as UTF-8, and decodes a value written
 * as RFC 2047 encoded words (`=?UTF-8?B?...?=`) before storing it. A value that is not ASCII is
 * returned RFC 2047-encoded (`=?UTF-8?B?<base64>?=`), which keeps response headers ASCII; ASCII
 * values go back as they came. */

const ENCODED_WORD = /^=\?([^?]+)\?([BbQq])\?([^?]*)\?=$/
const utf8 = new TextDecoder('utf-8', { fatal: true })

/** The text of a received header value: its bytes as UTF-8 when they are UTF-8, else as latin1;
 * an RFC 2047 value decoded. */
export function metaValueFromHeader(raw: string): string {
  const words = raw.trim().split(/[ \t]+/)
  if (raw.startsWith('=?') && words.every((word) => ENCODED_WORD.test(word))) {
    const decoded = words.map(decodeWord)
    if (decoded.every((word) => word !== null)) return decoded.join('')
  }
  return bytesAsText(raw)
}

function bytesAsText(raw: string): string {
  if (!/[\u0080-\u00ff]/.test(raw)) return raw
  try {
    return utf8.decode(Buffer.from(raw, 'latin1'))
  } catch {
    return raw
  }
}

/** One encoded word, or null when its charset is one S3 would not know or its text is malformed. */
function decodeWord(word: string): string | null {
  const [, charset = '', encoding = '', text = ''] = ENCODED_WORD.exec(word) ?? []
  const bytes =
    encoding.toUpperCase() === 'B'
      ? Buffer.from(text, 'base64')
      : Buffer.from(
          text
            .replace(/_/g, ' ')
            .replace(/=([0-9A-Fa-f]{2})/g, (_, hex: string) =>
              String.fromCharCode(parseInt(hex, 16)),
            ),
          'latin1',
        )
  switch (charset.toLowerCase()) {
    case 'utf-8':
    case 'us-ascii':
      try {
        return utf8.decode(bytes)
      } catch {
        return null
      }
    case 'iso-8859-1':
      return bytes.toString('latin1')
    default:
      return null
  }
}

/** The header value that returns `value`: itself when ASCII, else one RFC 2047 B-encoded word. */
export function metaValueToHeader(value: string): string {
  if (!/[^\x20-\x7e\t]/.test(value)) return value
  return `=?UTF-8?B?${Buffer.from(value, 'utf8').toString('base64')}?=`
}
