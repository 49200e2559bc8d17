/** @module S3 XML of GetObjectAttributes: the attribute names a request may ask for
 * (x-amz-object-attributes) and the GetObjectAttributesResponse, with Amazon S3's element names and
 * order. The ETag is unquoted there (as S3 answers), a COMPOSITE checksum carries its `-<parts>`
 * suffix as everywhere else (as Ceph answers, and conformance suites expect), and each part is
 * listed only when the object has a checksum. */
import { fail, ok, type Result } from '../../../protocol/errors.js'
import type { GetResult } from '../../../protocol/messages.js'
import { checksumElements } from './s3-xml.js'
import { newDocument, serialize, text } from './s3-xml.js'

export const OBJECT_ATTRIBUTES = [
  'ETag',
  'Checksum',
  'ObjectParts',
  'StorageClass',
  'ObjectSize',
] as const
export type ObjectAttribute = (typeof OBJECT_ATTRIBUTES)[number]

/** x-amz-object-attributes: a comma-separated list of attribute names, at least one. */
export function parseObjectAttributes(header: string | undefined): Result<Set<ObjectAttribute>> {
  const names = (header ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '')
  if (names.length === 0) {
    return fail(
      'invalid_argument',
      'The x-amz-object-attributes header specifying the attributes to be retrieved is either ' +
        'missing or empty',
    )
  }
  const wanted = new Set<ObjectAttribute>()
  for (const name of names) {
    const attribute = OBJECT_ATTRIBUTES.find((known) => known === name)
    if (attribute === undefined)
      return fail('invalid_argument', 'Invalid attribute name specified.')
    wanted.add(attribute)
  }
  return ok(wanted)
}

export interface AttributesXmlOptions {
  found: GetResult
  wanted: Set<ObjectAttribute>
  /** ObjectParts paging (x-amz-part-number-marker, x-amz-max-parts). */
  partNumberMarker: number
  maxParts: number
}

export function objectAttributesXml(options: AttributesXmlOptions): string {
  const { found, wanted } = options
  const { info } = found
  const root = newDocument('GetObjectAttributesResponse', true)
  if (wanted.has('ETag')) text(root, 'ETag', info.etag.replace(/^"(.*)"$/, '$1'))
  const hasChecksum = Object.values(info.checksums).some((value) => value !== '')
  if (wanted.has('Checksum') && hasChecksum) {
    checksumElements(root.ele('Checksum'), info.checksums, info.checksumType ?? 'FULL_OBJECT')
  }
  if (wanted.has('ObjectParts') && info.partsCount !== undefined) {
    objectPartsXml(root.ele('ObjectParts'), options, hasChecksum)
  }
  if (wanted.has('StorageClass')) text(root, 'StorageClass', 'STANDARD')
  if (wanted.has('ObjectSize')) text(root, 'ObjectSize', info.size)
  return serialize(root)
}

function objectPartsXml(
  element: ReturnType<typeof newDocument>,
  options: AttributesXmlOptions,
  listParts: boolean,
): void {
  const parts = options.found.parts ?? []
  text(element, 'PartsCount', options.found.info.partsCount ?? parts.length)
  if (!listParts) return
  const page = parts.slice(options.partNumberMarker, options.partNumberMarker + options.maxParts)
  const truncated = options.partNumberMarker + page.length < parts.length
  text(element, 'PartNumberMarker', options.partNumberMarker)
  text(element, 'NextPartNumberMarker', options.partNumberMarker + page.length)
  text(element, 'MaxParts', options.maxParts)
  text(element, 'IsTruncated', truncated)
  for (const [index, part] of page.entries()) {
    const entry = element.ele('Part')
    text(entry, 'PartNumber', options.partNumberMarker + index + 1)
    text(entry, 'Size', part.size)
    checksumElements(entry, part.checksums)
  }
}
