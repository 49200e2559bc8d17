/** @module Which bucket and key a request addresses. Path style: `/{bucket}/{key}`. Virtual-hosted
 * style when SVC_DOMAIN is set and the Host is `{bucket}.{domain}`: the whole path is the key. The
 * key is the path percent-decoded exactly once, byte for byte: `a//b`, `../x` and `%2e` stay as
 * sent. A key whose bytes are not UTF-8 is refused. */
import { fail, ok, type Result } from '../../protocol/errors.js'

export interface Target {
  bucket: string | null
  key: string | null
}

const URI_UNPARSEABLE = "Couldn't parse the specified URI."

/** The bytes `raw` escapes, read as UTF-8; null when they are not UTF-8 or an escape is malformed:
 * S3 answers 400 InvalidURI. (node:http itself refuses raw bytes beyond ASCII in the path.) */
function decode(raw: string): string | null {
  try {
    return decodeURIComponent(raw)
  } catch {
    return null
  }
}

export function parseTarget(
  rawPath: string,
  host: string,
  domain: string | undefined,
): Result<Target> {
  if (!rawPath.startsWith('/')) return fail('invalid_argument', 'request path must start with /')
  const hostName = host.replace(/:\d+$/, '').toLowerCase()
  if (domain !== undefined && hostName.endsWith('.' + domain.toLowerCase())) {
    const bucket = hostName.slice(0, -(domain.length + 1))
    const key = rawPath.length > 1 ? decode(rawPath.slice(1)) : null
    if (rawPath.length > 1 && key === null) return fail('invalid_uri', URI_UNPARSEABLE)
    return ok({ bucket, key })
  }
  const slash = rawPath.indexOf('/', 1)
  const rawBucket = slash === -1 ? rawPath.slice(1) : rawPath.slice(1, slash)
  const bucket = rawBucket === '' ? null : decode(rawBucket)
  if (rawBucket !== '' && bucket === null) return fail('invalid_uri', URI_UNPARSEABLE)
  if (slash === -1 || slash === rawPath.length - 1) return ok({ bucket, key: null })
  const key = decode(rawPath.slice(slash + 1))
  if (key === null) return fail('invalid_uri', URI_UNPARSEABLE)
  return ok({ bucket, key })
}
