/** @module S3 XML of versioning: the VersioningConfiguration a client puts and gets, and
 * ListVersionsResult (ListObjectVersions), with Amazon S3's element names and order. A bucket that
 * was never configured answers an empty configuration. */
import { fail, ok, type Result } from '../../../protocol/errors.js'
import type { VersionListing } from '../../../protocol/messages.js'
import {
  encoderFor,
  newDocument,
  owner,
  parseXmlBody,
  s3Timestamp,
  serialize,
  text,
  xmlChildText,
  type EncodingType,
  type S3Owner,
} from './s3-xml.js'

export type VersioningStatus = 'Enabled' | 'Suspended'

/** A PutBucketVersioning body: Status Enabled or Suspended. MFA delete cannot be enabled here (it
 * needs an MFA device S3 checks); `MfaDelete` Disabled is accepted. */
export function parseVersioningConfiguration(xml: string | Uint8Array): Result<VersioningStatus> {
  const root = parseXmlBody(xml, 'VersioningConfiguration')
  if (!root.ok) return root
  for (const name of Object.keys(root.value)) {
    if (name !== 'Status' && name !== 'MfaDelete' && !name.startsWith('@_')) {
      return fail('malformed_xml', `unexpected element ${name}`)
    }
  }
  const mfa = xmlChildText(root.value, 'MfaDelete')
  if (!mfa.ok) return mfa
  if (mfa.value !== undefined && mfa.value.trim() !== 'Disabled') {
    return fail('malformed_xml', 'MfaDelete can only be Disabled here')
  }
  const status = xmlChildText(root.value, 'Status')
  if (!status.ok) return status
  const value = status.value?.trim()
  if (value !== 'Enabled' && value !== 'Suspended') {
    return fail('malformed_xml', 'Status must be Enabled or Suspended')
  }
  return ok(value)
}

export function versioningConfigurationXml(status: VersioningStatus | null): string {
  const root = newDocument('VersioningConfiguration', true)
  if (status !== null) text(root, 'Status', status)
  return serialize(root)
}

export interface ListVersionsXmlOptions {
  bucket: string
  listing: VersionListing
  prefix: string
  delimiter: string
  keyMarker: string
  versionIdMarker: string
  maxKeys: number
  encodingType: EncodingType | undefined
  by: S3Owner
}

export function listVersionsXml(options: ListVersionsXmlOptions): string {
  const { listing } = options
  const encode = encoderFor(options.encodingType)
  const root = newDocument('ListVersionsResult', true)
  text(root, 'Name', options.bucket)
  text(root, 'Prefix', encode(options.prefix))
  text(root, 'KeyMarker', encode(options.keyMarker))
  text(root, 'VersionIdMarker', options.versionIdMarker)
  if (listing.truncated) {
    text(root, 'NextKeyMarker', encode(listing.nextKeyMarker ?? ''))
    if (listing.nextVersionIdMarker !== null) {
      text(root, 'NextVersionIdMarker', listing.nextVersionIdMarker)
    }
  }
  text(root, 'MaxKeys', options.maxKeys)
  if (options.delimiter !== '') text(root, 'Delimiter', encode(options.delimiter))
  text(root, 'IsTruncated', listing.truncated)
  for (const version of listing.versions) {
    const element = root.ele(version.deleteMarker ? 'DeleteMarker' : 'Version')
    text(element, 'Key', encode(version.key))
    text(element, 'VersionId', version.versionId)
    text(element, 'IsLatest', version.isLatest)
    text(element, 'LastModified', s3Timestamp(version.lastModifiedMs))
    if (!version.deleteMarker) {
      text(element, 'ETag', version.etag)
      text(element, 'Size', version.size)
      text(element, 'StorageClass', 'STANDARD')
    }
    owner(element, options.by)
  }
  for (const prefix of listing.commonPrefixes) {
    text(root.ele('CommonPrefixes'), 'Prefix', encode(prefix))
  }
  if (options.encodingType !== undefined) text(root, 'EncodingType', options.encodingType)
  return serialize(root)
}
