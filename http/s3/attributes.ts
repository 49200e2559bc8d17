/** @module GetObjectAttributes (GET /{bucket}/{key}?attributes): what HeadObject and ListParts
 * would say of an object, in one XML answer with only the attributes x-amz-object-attributes
 * names, of the current version or of one by versionId. Like HeadObject, it answers a delete
 * marker with 404 (405 by id) and x-amz-delete-marker. */
import { LIST_PARTS_MAX } from '../../protocol/limits.js'
import type { GetResult, MarkerResult } from '../../protocol/messages.js'
import { objectAttributesXml, parseObjectAttributes } from './xml/s3-attributes-xml.js'
import { askCoordinator, sendError, sendXml, type S3Exchange } from './exchange.js'
import { parseCount } from './multipart.js'
import { versionHeaders } from './object-headers.js'
import { sendMarker } from './objects.js'

export async function getObjectAttributes(
  ex: S3Exchange,
  at: { bucket: string; key: string },
): Promise<void> {
  const wanted = parseObjectAttributes(ex.headers['x-amz-object-attributes'])
  if (!wanted.ok) return sendError(ex, wanted.code, wanted.detail)
  const maxParts = parseCount(ex.headers['x-amz-max-parts'] ?? null, 'max-parts', LIST_PARTS_MAX)
  if (!maxParts.ok) return sendError(ex, maxParts.code, maxParts.detail)
  const marker = parseCount(
    ex.headers['x-amz-part-number-marker'] ?? '0',
    'part-number-marker',
    10_000,
  )
  if (!marker.ok) return sendError(ex, marker.code, marker.detail)
  const versionId = ex.query.get('versionId')
  const reply = await askCoordinator(ex, {
    kind: 'object.get',
    ...at,
    withParts: true,
    ...(versionId === null ? {} : { versionId }),
  })
  if (!reply.ok) return sendError(ex, reply.code, reply.detail)
  if ('marker' in reply.value) return sendMarker(ex, reply.value as MarkerResult)
  const found = reply.value as GetResult
  const xml = objectAttributesXml({
    found,
    wanted: wanted.value,
    partNumberMarker: marker.value,
    maxParts: maxParts.value,
  })
  sendXml(ex, 200, xml, {
    'last-modified': new Date(found.info.lastModifiedMs).toUTCString(),
    ...versionHeaders(found.info),
  })
}
