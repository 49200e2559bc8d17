/** @module Which bucket and key a request addresses. Path style: `/{bucket}/{key}`. Virtual-hosted
 * style when SVC_DOMAIN is set and the Host is `{bucket}.{domain}`: the whole path is the key. The
 * key is the path percent-decoded exactly once, byte for byte: `a//b`, `../x` and `%2e` stay as
 * sent. */
import { fail, ok, type Result } from '../../protocol/errors.js'

export interface Target {
  bucket: string | null
  key: string | null
}

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
    if (rawPath.length > 1 && key === null)
      return fail('invalid_argument', 'malformed path encoding')
    return ok({ bucket, key })
  }
  const slash = rawPath.indexOf('/', 1)
  const rawBucket = slash === -1 ? rawPath.slice(1) : rawPath.slice(1, slash)
  const bucket = rawBucket === '' ? null : decode(rawBucket)
  if (rawBucket !== '' && bucket === null)
    return fail('invalid_argument', 'malformed path encoding')
  if (slash === -1 || slash === rawPath.length - 1) return ok({ bucket, key: null })
  const key = decode(rawPath.slice(slash + 1))
  if (key === null) return fail('invalid_argument', 'malformed path encoding')
  return ok({ bucket, key })
}
