/** @module S3 XML codecs: the bodies of the S3 API, built with xmlbuilder2 and parsed with
 * fast-xml-parser, with exactly Amazon S3's element names. Response roots carry the 2006-03-01
 * namespace as Amazon S3's do, except `<Error>`, which S3 sends without one. Parsing is defensive:
 * bodies come from clients, so size, depth and entities are bounded, DTDs are refused, and text
 * stays text (a key `007` is not a number, a key of spaces keeps its spaces). Also owns the opaque
 * continuation tokens of ListObjectsV2. Pure functions; the one state is s3Timestamp's memo of the
 * last day it formatted. */
import assert from 'node:assert/strict'
import { XMLParser, XMLValidator, type EntityDecoderOptions } from 'fast-xml-parser'
import { create } from 'xmlbuilder2'
import { fail, ok, type Result } from '../../../protocol/errors.js'
import {
  DELETE_OBJECTS_KEYS_MAX,
  KEY_BYTES_MAX,
  XML_BODY_BYTES_MAX,
} from '../../../protocol/limits.js'
import type { ObjectColumns } from '../../../protocol/object-columns.js'
import type { BucketInfo, Checksums, ChecksumType, ListPage } from '../../../protocol/objects.js'
import { XmlWriter } from './xml-writer.js'

export const S3_NAMESPACE = 'http://s3.amazonaws.com/doc/2006-03-01/'
/** The deepest S3 request body (lifecycle rules: rule, filter, and, tag, key) nests about six
 * levels; 32 leaves room for all of them while bounding the parser's recursion. */
const XML_DEPTH_MAX = 32
const TEXT = '#text'

export type XMLBuilder = ReturnType<typeof create>

export interface S3Owner {
  id: string
  displayName: string
}

// ---------------------------------------------------------------------------------------------
// Building

export function newDocument(rootName: string, namespaced: boolean): XMLBuilder {
  const root = create({ version: '1.0', encoding: 'UTF-8' })
  return namespaced ? root.ele(S3_NAMESPACE, rootName) : root.ele(rootName)
}

/** Characters XML 1.0 cannot carry as literal text (C0 controls but tab and newline, CR which
 * parsers turn into LF, and the non-characters U+FFFE and U+FFFF). */
const XML_UNSAFE_CHARACTERS = /[\u0000-\u0008\u000B-\u001F\uFFFE\uFFFF]/g

/** Serializes, then writes each character XML 1.0 cannot carry literally as a character reference
 * (`&#x1;`), which is how keys with control characters reach clients and how they send them back
 * (AWS SDKs decode such references). Markup we emit never contains these characters, so the
 * replacement only touches text. */
export function serialize(root: XMLBuilder): string {
  const xml = root.end({ prettyPrint: false })
  return xml.replace(XML_UNSAFE_CHARACTERS, (character) => {
    return `&#x${character.charCodeAt(0).toString(16).toUpperCase()};`
  })
}

/** Escapes `&` before handing text to xmlbuilder2: its serializer leaves any `&name;` or `&#65;`
 * in text as is (it assumes an entity was meant), so a key `a&amp;b` would reach the client as
 * `a&b`. Once every `&` is `&amp;` there is nothing left for it to misread; it escapes `<` and
 * `>` itself. The round-trip tests keep this honest if xmlbuilder2 changes. */
function escapedText(value: string): string {
  return value.replaceAll('&', '&amp;')
}

export function text(parent: XMLBuilder, name: string, value: string | number | boolean): void {
  parent.ele(name).txt(escapedText(String(value)))
}

const DAY_MS = 86_400_000
/** 10000-01-01T00:00:00.000Z: from there on (and before 1970) toISOString's own format is used,
 * which writes such years with a sign and six digits. */
const FAST_TIMESTAMP_MS_END = 253_402_300_800_000
/** The UTC day s3Timestamp formatted last, and its `YYYY-MM-DDT`. */
let memoDay = Number.NaN
let memoDatePart = ''

/** ISO 8601 with milliseconds in UTC, as S3 writes every timestamp in XML: what
 * Date#toISOString writes. A listing page writes 1000 of them, and toISOString took a large share
 * of the page's XML, so the date part is formatted once per UTC day and the time of day by
 * arithmetic. */
export function s3Timestamp(ms: number): string {
  assert(Number.isFinite(ms))
  const time = Math.trunc(ms) // A Date's time value is truncated the same way.
  if (!(time >= 0 && time < FAST_TIMESTAMP_MS_END)) return new Date(time).toISOString()
  const day = Math.floor(time / DAY_MS)
  if (day !== memoDay) {
    memoDatePart = new Date(day * DAY_MS).toISOString().slice(0, 11)
    memoDay = day
  }
  let rest = time - day * DAY_MS
  const hours = Math.floor(rest / 3_600_000)
  rest -= hours * 3_600_000
  const minutes = Math.floor(rest / 60_000)
  rest -= minutes * 60_000
  const seconds = Math.floor(rest / 1000)
  const millis = rest - seconds * 1000
  return `${memoDatePart}${twoDigits(hours)}:${twoDigits(minutes)}:${twoDigits(seconds)}.${
    millis < 10 ? '00' : millis < 100 ? '0' : ''
  }${millis}Z`
}

function twoDigits(value: number): string {
  return value < 10 ? `0${value}` : `${value}`
}

export function owner(parent: XMLBuilder, value: S3Owner): void {
  const element = parent.ele('Owner')
  text(element, 'ID', value.id)
  text(element, 'DisplayName', value.displayName)
}

export interface ListBucketsXmlOptions {
  buckets: readonly BucketInfo[]
  by: S3Owner
  /** The node's region, each bucket's BucketRegion. */
  region: string
  /** The token of the next page, when there is one. */
  continuationToken?: string | undefined
  /** The request's prefix, echoed when it had one. */
  prefix?: string | undefined
}

export function listBucketsXml(options: ListBucketsXmlOptions): string {
  const root = newDocument('ListAllMyBucketsResult', true)
  owner(root, options.by)
  const list = root.ele('Buckets')
  for (const bucket of options.buckets) {
    const element = list.ele('Bucket')
    text(element, 'Name', bucket.name)
    text(element, 'CreationDate', s3Timestamp(bucket.createdMs))
    text(element, 'BucketRegion', options.region)
  }
  if (options.continuationToken !== undefined) {
    text(root, 'ContinuationToken', options.continuationToken)
  }
  if (options.prefix !== undefined) text(root, 'Prefix', options.prefix)
  return serialize(root)
}

/** Percent-encodes a value the way S3 does for `encoding-type=url`, on the UTF-8 bytes: letters,
 * digits and `*` `-` `.` `_` `/` stay as they are, every other byte is `%XX` (upper-case hex), a
 * space `%20` and `~` `%7E` among them.
 * Sources: the conformance suite run against Amazon S3 (s3-tests' encoding tests: `quux ab/` as
 * `quux%20ab/`, `asdf+b` as `asdf%2Bb`), AWS's EncodingType docs (`test_file(3).png` as
 * `test_file%283%29.png`), and MinIO's encoder, whose S3 exceptions keep `/` and `*` and escape
 * `~`. So a key with a space and one with a `+` stay apart, and `%XX` decoding restores either. */
export function s3UrlEncode(value: string): string {
  let encoded = ''
  for (const byte of Buffer.from(value, 'utf8')) {
    if (isUrlSafeByte(byte)) encoded += String.fromCharCode(byte)
    else encoded += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`
  }
  return encoded
}

/** Alphanumerics and `*` `-` `.` `/` `_`, as ASCII bytes. */
const URL_SAFE_BYTES = new Set(
  Buffer.from('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789*-./_', 'latin1'),
)

function isUrlSafeByte(byte: number): boolean {
  return URL_SAFE_BYTES.has(byte)
}

export type EncodingType = 'url'

/** What both list versions share: the request's echo and one page from the store. */
export interface ListXmlOptions {
  bucket: string
  prefix: string
  /** '' when the request had none: then no Delimiter element is written. */
  delimiter: string
  maxKeys: number
  page: ListPage
  encodingType?: EncodingType | undefined
}

export interface ListObjectsV2XmlOptions extends ListXmlOptions {
  /** The token exactly as the request sent it; echoed, never re-encoded. */
  continuationToken?: string | undefined
  startAfter?: string | undefined
  /** fetch-owner=true: only then does each Contents carry an Owner. */
  fetchOwner: boolean
  owner: S3Owner
}

export interface ListObjectsV1XmlOptions extends ListXmlOptions {
  /** '' when the request had none; V1 always echoes the element. */
  marker: string
  owner: S3Owner
}

export function encoderFor(encodingType: EncodingType | undefined): (value: string) => string {
  return encodingType === 'url' ? s3UrlEncode : (value) => value
}

function contents(
  xml: XmlWriter,
  objects: ObjectColumns,
  by: S3Owner | undefined,
  encode: (value: string) => string,
): void {
  const { keys, sizes, etags, lastModifiedMs } = objects
  // The columns have one length: every index below keys.length is in each of them.
  for (let index = 0; index < keys.length; index++) {
    xml.open('Contents')
    xml.text('Key', encode(keys[index] as string))
    xml.text('LastModified', s3Timestamp(lastModifiedMs[index] as number))
    xml.text('ETag', etags[index] as string)
    xml.text('Size', sizes[index] as number)
    xml.text('StorageClass', 'STANDARD')
    if (by !== undefined)
      xml.open('Owner').text('ID', by.id).text('DisplayName', by.displayName).close('Owner')
    xml.close('Contents')
  }
}

function commonPrefixes(
  xml: XmlWriter,
  prefixes: readonly string[],
  encode: (value: string) => string,
): void {
  for (const prefix of prefixes) {
    xml.open('CommonPrefixes').text('Prefix', encode(prefix)).close('CommonPrefixes')
  }
}

/** ListBucketResult of ListObjectsV2. Element order follows Amazon S3's responses; clients read
 * by name, but matching S3 byte for byte keeps diffs against it readable. Listings are the large
 * documents, so they use XmlWriter (see xml-writer.ts for the measurement). */
export function listObjectsV2Xml(options: ListObjectsV2XmlOptions): string {
  const { page } = options
  assert(options.maxKeys >= 0)
  const encode = encoderFor(options.encodingType)
  const xml = new XmlWriter().open('ListBucketResult', S3_NAMESPACE)
  xml.text('Name', options.bucket)
  xml.text('Prefix', encode(options.prefix))
  if (options.startAfter !== undefined) xml.text('StartAfter', encode(options.startAfter))
  if (options.continuationToken !== undefined) {
    xml.text('ContinuationToken', options.continuationToken)
  }
  if (page.truncated) {
    xml.text('NextContinuationToken', encodeContinuationToken(page.lastReturned))
  }
  xml.text('KeyCount', page.objects.keys.length + page.commonPrefixes.length)
  xml.text('MaxKeys', options.maxKeys)
  if (options.delimiter !== '') xml.text('Delimiter', encode(options.delimiter))
  if (options.encodingType !== undefined) xml.text('EncodingType', options.encodingType)
  xml.text('IsTruncated', page.truncated)
  contents(xml, page.objects, options.fetchOwner ? options.owner : undefined, encode)
  commonPrefixes(xml, page.commonPrefixes, encode)
  return xml.close('ListBucketResult').end()
}

/** ListBucketResult of the original ListObjects. NextMarker is written only when a delimiter was
 * given and the page is truncated, as S3 does: without a delimiter the client continues from the
 * last Key it received. */
export function listObjectsV1Xml(options: ListObjectsV1XmlOptions): string {
  const { page } = options
  assert(options.maxKeys >= 0)
  const encode = encoderFor(options.encodingType)
  const xml = new XmlWriter().open('ListBucketResult', S3_NAMESPACE)
  xml.text('Name', options.bucket)
  xml.text('Prefix', encode(options.prefix))
  xml.text('Marker', encode(options.marker))
  if (options.delimiter !== '' && page.truncated) {
    xml.text('NextMarker', encode(page.lastReturned))
  }
  xml.text('MaxKeys', options.maxKeys)
  if (options.delimiter !== '') xml.text('Delimiter', encode(options.delimiter))
  if (options.encodingType !== undefined) xml.text('EncodingType', options.encodingType)
  xml.text('IsTruncated', page.truncated)
  contents(xml, page.objects, options.owner, encode)
  commonPrefixes(xml, page.commonPrefixes, encode)
  return xml.close('ListBucketResult').end()
}

export interface DeleteResultXmlOptions {
  deleted: readonly {
    key: string
    versionId?: string | undefined
    /** A delete marker was added (with this id) or removed by this delete. */
    deleteMarker?: boolean | undefined
    deleteMarkerVersionId?: string | undefined
  }[]
  /** `code` is already an S3 error code (e.g. AccessDenied). */
  errors: readonly { key: string; versionId?: string | undefined; code: string; message: string }[]
  quiet: boolean
}

/** DeleteResult of DeleteObjects. In quiet mode S3 reports only the keys it failed to delete. */
export function deleteResultXml(options: DeleteResultXmlOptions): string {
  const root = newDocument('DeleteResult', true)
  if (!options.quiet) {
    for (const entry of options.deleted) {
      const element = root.ele('Deleted')
      text(element, 'Key', entry.key)
      if (entry.versionId !== undefined) text(element, 'VersionId', entry.versionId)
      if (entry.deleteMarker === true) text(element, 'DeleteMarker', true)
      if (entry.deleteMarkerVersionId !== undefined) {
        text(element, 'DeleteMarkerVersionId', entry.deleteMarkerVersionId)
      }
    }
  }
  for (const entry of options.errors) {
    const element = root.ele('Error')
    text(element, 'Key', entry.key)
    if (entry.versionId !== undefined) text(element, 'VersionId', entry.versionId)
    text(element, 'Code', entry.code)
    text(element, 'Message', entry.message)
  }
  return serialize(root)
}

export function copyObjectResultXml(result: { etag: string; lastModifiedMs: number }): string {
  const root = newDocument('CopyObjectResult', true)
  text(root, 'LastModified', s3Timestamp(result.lastModifiedMs))
  text(root, 'ETag', result.etag)
  return serialize(root)
}

export interface StoredObjectAt {
  location: string
  bucket: string
  key: string
  etag: string
  checksums?: Checksums
  checksumType?: ChecksumType
}

/** ChecksumCRC32, ChecksumCRC64NVME, ChecksumSHA256... elements, and ChecksumType when given. */
export function checksumElements(parent: XMLBuilder, checksums: Checksums, type?: ChecksumType) {
  const entries = Object.entries(checksums).filter(([, value]) => value !== '')
  for (const [algorithm, value] of entries) {
    text(parent, `Checksum${algorithm.toUpperCase()}`, value)
  }
  if (type !== undefined && entries.length > 0) text(parent, 'ChecksumType', type)
}

/** Where a write put an object, its ETag and checksum: CompleteMultipartUpload's answer, and a
 * form upload's to `success_action_status` 201 (which S3 writes without a namespace). */
export function storedObjectXml(
  rootName: string,
  namespaced: boolean,
  result: StoredObjectAt,
): string {
  const root = newDocument(rootName, namespaced)
  text(root, 'Location', result.location)
  text(root, 'Bucket', result.bucket)
  text(root, 'Key', result.key)
  text(root, 'ETag', result.etag)
  checksumElements(root, result.checksums ?? {}, result.checksumType)
  return serialize(root)
}

/** S3 answers GetBucketLocation with an empty element for us-east-1, its historical default. */
export function locationConstraintXml(region: string): string {
  const root = newDocument('LocationConstraint', true)
  if (region !== 'us-east-1') root.txt(escapedText(region))
  return serialize(root)
}

export interface ErrorXmlOptions {
  code: string
  message: string
  resource: string
  requestId: string
  /** Further elements S3 adds for some errors (BucketName, Key, ArgumentName...), in this order. */
  extra?: Readonly<Record<string, string>> | undefined
}

const ERROR_FIXED_ELEMENTS = new Set(['Code', 'Message', 'Resource', 'RequestId'])

/** The body of every error response; S3 writes it without a namespace. */
export function errorXml(options: ErrorXmlOptions): string {
  const root = newDocument('Error', false)
  text(root, 'Code', options.code)
  text(root, 'Message', options.message)
  text(root, 'Resource', options.resource)
  text(root, 'RequestId', options.requestId)
  for (const [name, value] of Object.entries(options.extra ?? {})) {
    // Element names come from our code, never from a client: a bad one is our bug.
    assert(/^[A-Z][A-Za-z0-9]*$/.test(name), name)
    assert(!ERROR_FIXED_ELEMENTS.has(name), name)
    text(root, name, value)
  }
  return serialize(root)
}

// ---------------------------------------------------------------------------------------------
// Parsing

/** A parsed element: children by name (a repeated name gives an array), text under `#text` when
 * it is mixed with children. A text-only element is just its string. */
export type XmlNode = string | XmlElement
export interface XmlElement {
  [name: string]: XmlNode | XmlNode[]
}

const XML_ENTITIES: Readonly<Record<string, string>> = {
  lt: '<',
  gt: '>',
  amp: '&',
  apos: "'",
  quot: '"',
}

/** Decodes one reference; throws (and the parse fails) on anything but the five XML entities and
 * numeric references to a Unicode scalar value. Control characters are accepted, as XML 1.1 and
 * Amazon S3 accept them: keys may contain them. */
function decodeReference(reference: string, name: string): string {
  // hasOwn: `&constructor;` must not find Object.prototype.constructor.
  const known = Object.hasOwn(XML_ENTITIES, name) ? XML_ENTITIES[name] : undefined
  if (known !== undefined) return known
  const numeric = /^#(?:x([0-9A-Fa-f]{1,6})|([0-9]{1,7}))$/.exec(name)
  if (numeric === null) throw new Error(`unknown entity ${reference}`)
  const point = numeric[1] !== undefined ? parseInt(numeric[1], 16) : Number(numeric[2])
  const isSurrogate = point >= 0xd800 && point <= 0xdfff
  if (point === 0 || isSurrogate || point > 0x10ffff) throw new Error(`bad reference ${reference}`)
  return String.fromCodePoint(point)
}

/** Replaces fast-xml-parser's own decoder, which ignores numeric references unless HTML entities
 * are on (and then expands hundreds of HTML names) and accepts DTD-declared entities. Ours knows
 * only what XML itself defines, so nothing can expand beyond one character per reference. */
const entityDecoder: EntityDecoderOptions = {
  setExternalEntities: () => undefined,
  addInputEntities: (entities) => {
    if (Object.keys(entities).length > 0) throw new Error('entity declarations are refused')
  },
  reset: () => undefined,
  setXmlVersion: () => undefined,
  decode: (value) => value.replace(/&([^&;]*);/g, decodeReference),
}

function newParser(): XMLParser {
  return new XMLParser({
    ignoreAttributes: true,
    removeNSPrefix: true,
    parseTagValue: false,
    parseAttributeValue: false,
    trimValues: false,
    ignoreDeclaration: true,
    ignorePiTags: true,
    // Enabled so that text goes through our decoder; DTDs never get this far.
    processEntities: true,
    htmlEntities: false,
    entityDecoder,
    maxNestedTags: XML_DEPTH_MAX,
    textNodeName: TEXT,
  })
}

function decodeBody(xml: string | Uint8Array): Result<string> {
  if (typeof xml === 'string') {
    if (Buffer.byteLength(xml, 'utf8') > XML_BODY_BYTES_MAX) {
      return fail('malformed_xml', `XML body larger than ${String(XML_BODY_BYTES_MAX)} bytes`)
    }
    return ok(xml.startsWith('\uFEFF') ? xml.slice(1) : xml)
  }
  if (xml.byteLength > XML_BODY_BYTES_MAX) {
    return fail('malformed_xml', `XML body larger than ${String(XML_BODY_BYTES_MAX)} bytes`)
  }
  try {
    return ok(new TextDecoder('utf-8', { fatal: true }).decode(xml))
  } catch {
    return fail('malformed_xml', 'XML body is not valid UTF-8')
  }
}

/** Parses a request body that must be one `rootName` element and returns that element's content.
 * Refuses (malformed_xml) bodies over XML_BODY_BYTES_MAX, invalid UTF-8, anything not well formed,
 * DTDs (S3 bodies never have one, and they are how entity expansion attacks start), unknown
 * entities, nesting deeper than XML_DEPTH_MAX, and a different root. Namespace prefixes are
 * dropped, so `<s3:Delete>` is `Delete`. */
export function parseXmlBody(xml: string | Uint8Array, rootName: string): Result<XmlElement> {
  const body = decodeBody(xml)
  if (!body.ok) return body
  if (/<!DOCTYPE/i.test(body.value)) return fail('malformed_xml', 'DTDs are not accepted')
  const validation = XMLValidator.validate(body.value)
  if (validation !== true) {
    const { msg, line } = validation.err
    return fail('malformed_xml', `not well formed at line ${String(line)}: ${msg}`)
  }
  let parsed: unknown
  try {
    parsed = newParser().parse(body.value)
  } catch (error) {
    return fail('malformed_xml', `unparsable XML: ${(error as Error).message}`)
  }
  assert(typeof parsed === 'object' && parsed !== null)
  const roots = Object.keys(parsed)
  if (roots.length !== 1 || roots[0] !== rootName) {
    return fail('malformed_xml', `expected root element ${rootName}, found ${roots.join(', ')}`)
  }
  const content = (parsed as Record<string, XmlNode | XmlNode[]>)[rootName]
  if (typeof content === 'string') {
    // An empty root (<Delete/>) is an element without children; text directly in it is not S3 XML.
    if (content.trim() !== '') return fail('malformed_xml', `${rootName} holds text`)
    return ok({})
  }
  if (content === undefined || Array.isArray(content)) {
    return fail('malformed_xml', `expected one ${rootName} element`)
  }
  return ok(content)
}

/** The children of `element` named `name`, as a list whether there were none, one or many. */
export function xmlChildren(element: XmlElement, name: string): XmlNode[] {
  if (!Object.hasOwn(element, name)) return []
  const value = element[name]
  if (value === undefined) return []
  return Array.isArray(value) ? value : [value]
}

/** The text of a node that must hold only text: a plain string, or an element whose only entry is
 * `#text` (text split by CDATA sections). Undefined for an element with children. */
export function xmlText(node: XmlNode): string | undefined {
  if (typeof node === 'string') return node
  const names = Object.keys(node)
  if (names.length === 1 && names[0] === TEXT) {
    const value = node[TEXT]
    if (typeof value === 'string') return value
    if (Array.isArray(value) && value.every((part) => typeof part === 'string')) {
      return value.join('')
    }
  }
  return undefined
}

/** The text of the at most one child `name` of `element`: undefined when absent, malformed_xml when
 * repeated or not text. Whitespace is kept; callers of flags and enums trim it themselves. */
export function xmlChildText(element: XmlElement, name: string): Result<string | undefined> {
  const children = xmlChildren(element, name)
  const [only] = children
  if (only === undefined) return ok(undefined)
  if (children.length > 1) return fail('malformed_xml', `more than one ${name}`)
  const value = xmlText(only)
  if (value === undefined) return fail('malformed_xml', `${name} must hold text`)
  return ok(value)
}

/** The at most one child element `name` of `element`: null when absent, malformed_xml when
 * repeated or holding text. */
export function xmlChildElement(element: XmlElement, name: string): Result<XmlElement | null> {
  const found = xmlChildren(element, name)
  if (found.length > 1) return fail('malformed_xml', `more than one ${name}`)
  const [only] = found
  if (only === undefined) return ok(null)
  if (typeof only !== 'string') return ok(only)
  return only.trim() === '' ? ok({}) : fail('malformed_xml', `${name} holds text`)
}

/** The whole number in the at most one child `name`: null when absent, malformed_xml when not
 * digits (with an optional sign, so that the caller's rules answer a negative one). */
export function xmlChildInteger(element: XmlElement, name: string): Result<number | null> {
  const value = xmlChildText(element, name)
  if (!value.ok) return value
  if (value.value === undefined) return ok(null)
  const digits = value.value.trim()
  if (!/^-?\d+$/.test(digits)) return fail('malformed_xml', `${name} is not a whole number`)
  return ok(Number(digits))
}

export interface DeleteObjectsRequest {
  quiet: boolean
  keys: { key: string; versionId?: string }[]
}

/** Parses a DeleteObjects body:
 * `<Delete><Quiet>true</Quiet><Object><Key>k</Key><VersionId>v</VersionId></Object>...</Delete>`.
 * Keys are returned exactly as sent (spaces, leading zeros, references decoded). Key length is not
 * checked here: S3 reports an over-long key as a per-key error, not as a malformed body. */
export function parseDeleteObjects(xml: string | Uint8Array): Result<DeleteObjectsRequest> {
  const root = parseXmlBody(xml, 'Delete')
  if (!root.ok) return root
  const quiet = parseQuiet(root.value)
  if (!quiet.ok) return quiet
  const objects = xmlChildren(root.value, 'Object')
  if (objects.length === 0) return fail('malformed_xml', 'Delete lists no Object')
  if (objects.length > DELETE_OBJECTS_KEYS_MAX) {
    const counts = `${String(objects.length)} objects, at most ${String(DELETE_OBJECTS_KEYS_MAX)}`
    return fail('malformed_xml', `Delete lists ${counts}`)
  }
  const keys: DeleteObjectsRequest['keys'] = []
  for (const object of objects) {
    const entry = parseDeleteEntry(object)
    if (!entry.ok) return entry
    keys.push(entry.value)
  }
  assert(keys.length === objects.length)
  return ok({ quiet: quiet.value, keys })
}

function parseQuiet(root: XmlElement): Result<boolean> {
  const quiet = xmlChildText(root, 'Quiet')
  if (!quiet.ok) return quiet
  const value = quiet.value?.trim().toLowerCase()
  if (value === undefined || value === 'false') return ok(false)
  if (value === 'true') return ok(true)
  return fail('malformed_xml', 'Quiet must be true or false')
}

function parseDeleteEntry(object: XmlNode): Result<DeleteObjectsRequest['keys'][number]> {
  if (typeof object === 'string') return fail('malformed_xml', 'Object without Key')
  const key = xmlChildText(object, 'Key')
  if (!key.ok) return key
  if (key.value === undefined || key.value === '') {
    return fail('malformed_xml', 'Object without Key')
  }
  const versionId = xmlChildText(object, 'VersionId')
  if (!versionId.ok) return versionId
  if (versionId.value === undefined) return ok({ key: key.value })
  if (versionId.value === '') return fail('malformed_xml', 'empty VersionId')
  return ok({ key: key.value, versionId: versionId.value })
}

// ---------------------------------------------------------------------------------------------
// Continuation tokens

/** Token format version, the first byte of the decoded token: a later format (say, with a version
 * id marker) gets a new byte, and old tokens still decode or fail cleanly. */
const CONTINUATION_TOKEN_VERSION = '1'
/** base64url of the version byte and a key of at most KEY_BYTES_MAX bytes, unpadded. */
const CONTINUATION_TOKEN_CHARS_MAX = Math.ceil(((1 + KEY_BYTES_MAX) * 4) / 3)

/** An opaque ListObjectsV2 continuation token naming the last key (or common prefix) returned:
 * base64url of a version byte followed by the key's UTF-8 bytes. */
export function encodeContinuationToken(lastKey: string): string {
  assert(Buffer.byteLength(lastKey, 'utf8') <= KEY_BYTES_MAX)
  const token = Buffer.from(CONTINUATION_TOKEN_VERSION + lastKey, 'utf8').toString('base64url')
  assert(token.length <= CONTINUATION_TOKEN_CHARS_MAX)
  return token
}

/** The key a continuation token names. A token we did not make (bad alphabet, non-canonical
 * base64, invalid UTF-8, unknown version, over-long key) is refused the way S3 refuses it. */
export function decodeContinuationToken(token: string): Result<string> {
  const refuse = fail<string>('invalid_argument', 'The continuation token provided is incorrect')
  if (token.length === 0 || token.length > CONTINUATION_TOKEN_CHARS_MAX) return refuse
  if (!/^[A-Za-z0-9_-]+$/.test(token)) return refuse
  const bytes = Buffer.from(token, 'base64url')
  // Node's decoder skips stray bits; re-encoding catches tokens that are not exactly ours.
  if (bytes.toString('base64url') !== token) return refuse
  let decoded: string
  try {
    decoded = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes)
  } catch {
    return refuse
  }
  if (!decoded.startsWith(CONTINUATION_TOKEN_VERSION)) return refuse
  const key = decoded.slice(CONTINUATION_TOKEN_VERSION.length)
  if (Buffer.byteLength(key, 'utf8') > KEY_BYTES_MAX) return refuse
  return ok(key)
}
