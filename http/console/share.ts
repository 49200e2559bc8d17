/** @module Share links: a presigned GET of one object (or version) for a chosen time, signed with
 * the signed-in user's own S3 key, so the link can do what that user's key can and no more, and
 * stops working when the key is revoked or the time runs out. A user without S3 credentials is
 * told so: a session has no key of its own to sign with. */
import type { Context } from 'hono'
import type { Mesh } from '../../protocol/actor.js'
import { PRESIGN_EXPIRES_SECONDS_MAX } from '../../protocol/limits.js'
import { CALL_TIMEOUT_MS } from '../../protocol/timing.js'
import { configuredRegion } from '../s3/buckets.js'
import { presignGet } from '../s3/presign.js'
import { newRequestId } from '../s3/router.js'
import type { Session } from './session.js'

interface ShareInput {
  bucket: string
  key: string
  versionId?: string
  expiresSeconds: number
}

function parseShare(body: unknown): ShareInput | string {
  if (typeof body !== 'object' || body === null) return 'the body must be a JSON object'
  const {
    bucket,
    key,
    version_id: versionId,
    expires_seconds: seconds,
  } = body as Record<string, unknown>
  if (typeof bucket !== 'string' || bucket === '') return 'bucket must be a bucket name'
  if (typeof key !== 'string' || key === '') return 'key must be an object key'
  if (versionId !== undefined && typeof versionId !== 'string') return 'version_id must be text'
  if (
    typeof seconds !== 'number' ||
    !Number.isInteger(seconds) ||
    seconds < 1 ||
    seconds > PRESIGN_EXPIRES_SECONDS_MAX
  ) {
    return `expires_seconds must be a whole number from 1 to ${PRESIGN_EXPIRES_SECONDS_MAX}`
  }
  return { bucket, key, expiresSeconds: seconds, ...(versionId === undefined ? {} : { versionId }) }
}

export async function shareLink(c: Context, mesh: Mesh, session: Session): Promise<Response> {
  const input = parseShare(await c.req.json().catch(() => null))
  if (typeof input === 'string') return c.json({ error: input, code: 'InvalidArgument' }, 400)
  const deadlineMs = mesh.now() + CALL_TIMEOUT_MS
  const requestId = newRequestId()
  const user = await mesh.call('iam', {
    kind: 'iam.user.get',
    userId: session.principal.userId,
    requestId,
    deadlineMs,
  })
  const accessKey = user.ok ? user.value.accessKey : null
  if (accessKey === null) {
    const error =
      'Share links are signed with your S3 key, and you have none: a SuperUser can ' +
      'create one on the Users page.'
    return c.json({ error, code: 'NoS3Credentials' }, 409)
  }
  const key = await mesh.call('iam', { kind: 'iam.lookup-key', accessKey, requestId, deadlineMs })
  if (!key.ok) {
    return c.json(
      { error: 'Your S3 key cannot be read just now.', code: 'ServiceUnavailable' },
      503,
    )
  }
  const url = new URL(c.req.url)
  const link = presignGet({
    origin: url.origin,
    bucket: input.bucket,
    key: input.key,
    ...(input.versionId === undefined ? {} : { versionId: input.versionId }),
    accessKey,
    secretKey: key.value.secretKey,
    region: configuredRegion(mesh.config),
    nowMs: mesh.now(),
    expiresSeconds: input.expiresSeconds,
  })
  return c.json({ url: link, expires_at: new Date(mesh.now() + input.expiresSeconds * 1000) })
}
