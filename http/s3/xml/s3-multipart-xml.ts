/** @module S3 XML of multipart uploads: InitiateMultipartUploadResult, the CompleteMultipartUpload
 * request and its result, CopyPartResult, ListPartsResult and ListMultipartUploadsResult, with the
 * element names and order of Amazon S3. Parsing validates what a client sent and answers
 * `malformed_xml` (or `invalid_argument` for a part number out of range). */
import { fail, ok, type Result } from '../../../protocol/errors.js'
import { PART_NUMBER_MAX } from '../../../protocol/limits.js'
import { checksumAlgorithmFromHeader } from '../../../protocol/checksums.js'
import type { CompletedPart, PartListing, UploadListing } from '../../../protocol/messages.js'
import type { UploadChecksum } from '../../../protocol/multipart-checksum.js'
import type { Checksums, ChecksumType } from '../../../protocol/objects.js'
import {
  encoderFor,
  newDocument,
  owner,
  parseXmlBody,
  s3Timestamp,
  serialize,
  checksumElements,
  storedObjectXml,
  text,
  xmlChildren,
  xmlChildText,
  type EncodingType,
  type S3Owner,
  type StoredObjectAt,
  type XmlElement,
} from './s3-xml.js'

export interface UploadTarget {
  bucket: string
  key: string
  uploadId: string
}

export function initiateUploadXml(target: UploadTarget): string {
  const root = newDocument('InitiateMultipartUploadResult', true)
  text(root, 'Bucket', target.bucket)
  text(root, 'Key', target.key)
  text(root, 'UploadId', target.uploadId)
  return serialize(root)
}

export function completeUploadResultXml(options: StoredObjectAt): string {
  return storedObjectXml('CompleteMultipartUploadResult', true, options)
}

export function copyPartResultXml(result: {
  etag: string
  lastModifiedMs: number
  checksums: Checksums
}): string {
  const root = newDocument('CopyPartResult', true)
  text(root, 'LastModified', s3Timestamp(result.lastModifiedMs))
  text(root, 'ETag', result.etag)
  checksumElements(root, result.checksums)
  return serialize(root)
}

/** The parts of a CompleteMultipartUpload body, in the order given (the store checks the order). */
export function parseCompleteUpload(xml: string | Uint8Array): Result<CompletedPart[]> {
  const root = parseXmlBody(xml, 'CompleteMultipartUpload')
  if (!root.ok) return root
  const entries = xmlChildren(root.value, 'Part')
  if (entries.length === 0) {
    return fail('malformed_xml', 'CompleteMultipartUpload lists no Part')
  }
  if (entries.length > PART_NUMBER_MAX) {
    return fail('malformed_xml', `more than ${PART_NUMBER_MAX} parts`)
  }
  const parts: CompletedPart[] = []
  for (const entry of entries) {
    if (typeof entry === 'string') return fail('malformed_xml', 'Part without PartNumber')
    const number = xmlChildText(entry, 'PartNumber')
    if (!number.ok) return number
    const etag = xmlChildText(entry, 'ETag')
    if (!etag.ok) return etag
    if (number.value === undefined || etag.value === undefined) {
      return fail('malformed_xml', 'Part needs PartNumber and ETag')
    }
    const partNumber = parsePartNumber(number.value.trim())
    if (!partNumber.ok) return partNumber
    const checksums = partChecksums(entry)
    if (!checksums.ok) return checksums
    const part: CompletedPart = { partNumber: partNumber.value, etag: etag.value.trim() }
    if (Object.keys(checksums.value).length > 0) part.checksums = checksums.value
    parts.push(part)
  }
  return ok(parts)
}

/** The ChecksumCRC32 (and so on) elements of a Part: `x-amz-checksum-` and the lower-cased rest of
 * the name is the header of the same checksum. */
function partChecksums(entry: XmlElement): Result<Checksums> {
  const checksums: Checksums = {}
  for (const name of Object.keys(entry)) {
    if (!name.startsWith('Checksum')) continue
    const algorithm = checksumAlgorithmFromHeader('x-amz-checksum-' + name.slice('Checksum'.length))
    if (algorithm === null) continue
    const value = xmlChildText(entry, name)
    if (!value.ok) return value
    if (value.value !== undefined) checksums[algorithm] = value.value.trim()
  }
  return ok(checksums)
}

/** A part number as S3 takes it: a decimal integer from 1 to PART_NUMBER_MAX. */
export function parsePartNumber(value: string): Result<number> {
  const number = /^\d{1,5}$/.test(value) ? Number(value) : NaN
  if (!(number >= 1 && number <= PART_NUMBER_MAX)) {
    return fail(
      'invalid_argument',
      `Part number must be an integer between 1 and ${PART_NUMBER_MAX}, inclusive`,
    )
  }
  return ok(number)
}

export interface ListPartsXmlOptions extends UploadTarget {
  listing: PartListing
  partNumberMarker: number
  maxParts: number
  by: S3Owner
}

export function listPartsXml(options: ListPartsXmlOptions): string {
  const { listing } = options
  const root = newDocument('ListPartsResult', true)
  text(root, 'Bucket', options.bucket)
  text(root, 'Key', options.key)
  text(root, 'UploadId', options.uploadId)
  text(root, 'PartNumberMarker', options.partNumberMarker)
  text(root, 'NextPartNumberMarker', listing.nextPartNumberMarker)
  text(root, 'MaxParts', options.maxParts)
  text(root, 'IsTruncated', listing.truncated)
  for (const part of listing.parts) {
    const element = root.ele('Part')
    text(element, 'PartNumber', part.partNumber)
    text(element, 'LastModified', s3Timestamp(part.lastModifiedMs))
    text(element, 'ETag', part.etag)
    text(element, 'Size', part.size)
    checksumElements(element, part.checksums)
  }
  initiatorAndOwner(root, options.by)
  text(root, 'StorageClass', 'STANDARD')
  uploadChecksumElements(root, listing.checksum)
  return serialize(root)
}

function uploadChecksumElements(
  parent: ReturnType<typeof newDocument>,
  checksum: UploadChecksum | undefined,
): void {
  if (checksum === undefined) return
  text(parent, 'ChecksumAlgorithm', checksum.algorithm.toUpperCase())
  text(parent, 'ChecksumType', checksum.type)
}

function initiatorAndOwner(parent: ReturnType<typeof newDocument>, by: S3Owner): void {
  const initiator = parent.ele('Initiator')
  text(initiator, 'ID', by.id)
  text(initiator, 'DisplayName', by.displayName)
  owner(parent, by)
}

export interface ListUploadsXmlOptions {
  bucket: string
  listing: UploadListing
  prefix: string
  delimiter: string
  keyMarker: string
  uploadIdMarker: string
  maxUploads: number
  encodingType: EncodingType | undefined
  by: S3Owner
}

export function listUploadsXml(options: ListUploadsXmlOptions): string {
  const { listing } = options
  const encode = encoderFor(options.encodingType)
  const root = newDocument('ListMultipartUploadsResult', true)
  text(root, 'Bucket', options.bucket)
  text(root, 'KeyMarker', encode(options.keyMarker))
  text(root, 'UploadIdMarker', options.uploadIdMarker)
  text(root, 'NextKeyMarker', encode(listing.nextKeyMarker ?? ''))
  text(root, 'NextUploadIdMarker', listing.nextUploadIdMarker ?? '')
  if (options.delimiter !== '') text(root, 'Delimiter', encode(options.delimiter))
  text(root, 'Prefix', encode(options.prefix))
  text(root, 'MaxUploads', options.maxUploads)
  text(root, 'IsTruncated', listing.truncated)
  for (const upload of listing.uploads) {
    const element = root.ele('Upload')
    text(element, 'Key', encode(upload.key))
    text(element, 'UploadId', upload.uploadId)
    initiatorAndOwner(element, options.by)
    text(element, 'StorageClass', 'STANDARD')
    text(element, 'Initiated', s3Timestamp(upload.initiatedMs))
  }
  for (const prefix of listing.commonPrefixes) {
    text(root.ele('CommonPrefixes'), 'Prefix', encode(prefix))
  }
  if (options.encodingType !== undefined) text(root, 'EncodingType', options.encodingType)
  return serialize(root)
}
