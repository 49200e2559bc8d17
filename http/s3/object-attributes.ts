/** @module S3's headers and form fields of an object version's attributes
 * (protocol/object-attributes.ts): what a write names of them (PutObject, CreateMultipartUpload,
 * CopyObject with its directive, a form upload's fields) as the message's `attributes`, and what
 * GET and HEAD answer of them. Each attribute has its entry here; the writes and reads call only
 * this module's functions. Its own requests (`?tagging`) have their handlers apart (tagging.ts). */
import { fail, ok, type Result } from '../../protocol/errors.js'
import {
  ATTRIBUTE_NAMES,
  type AnyAttributes,
  type AttributeName,
  type AttributeSummary,
  type ObjectAttributes,
} from '../../protocol/object-attributes.js'
import { parseTaggingHeader } from '../../protocol/tagging.js'
import { parseTagging } from './xml/tagging-xml.js'

type Value<N extends AttributeName> = NonNullable<ObjectAttributes[N]>
/** What a request names of an attribute: its value, or undefined for nothing. */
type Named<N extends AttributeName> = Result<Value<N> | undefined>

interface AttributeFront<N extends AttributeName> {
  /** From the headers of PutObject and CreateMultipartUpload. */
  fromHeaders(headers: Record<string, string>): Named<N>
  /** From CopyObject's headers: undefined for the copy rule's (the source's, for tags). */
  forCopy(headers: Record<string, string>): Named<N>
  /** From a form upload's fields (POST Object). */
  fromForm(fields: ReadonlyMap<string, string>): Named<N>
  /** GET's and HEAD's headers of what the version reports of it. */
  headers(summary: NonNullable<AttributeSummary[N]>): Record<string, string>
}

function tagsOfHeader(headers: Record<string, string>): Named<'tags'> {
  const header = headers['x-amz-tagging']
  return header === undefined ? ok(undefined) : parseTaggingHeader(header)
}

/** x-amz-acl of a write (unsupported.ts refused the ACLs not held); `bucket-owner-full-control`
 * is true of every object, so it names none. */
function cannedAcl(canned: string | undefined): Named<'acl'> {
  if (canned === 'private' || canned === 'public-read' || canned === 'authenticated-read') {
    return ok(canned)
  }
  return ok(undefined)
}

function aclOfHeader(headers: Record<string, string>): Named<'acl'> {
  return cannedAcl(headers['x-amz-acl'])
}

const FRONTS: { [N in AttributeName]: AttributeFront<N> } = {
  tags: {
    fromHeaders: tagsOfHeader,
    // x-amz-tagging-directive: COPY (the default) keeps the source's; REPLACE takes
    // x-amz-tagging's, none without it.
    forCopy(headers) {
      const directive = (headers['x-amz-tagging-directive'] ?? 'COPY').toUpperCase()
      if (directive === 'COPY') return ok(undefined)
      if (directive !== 'REPLACE') return fail('invalid_argument', 'Unknown tagging directive.')
      const tags = tagsOfHeader(headers)
      return tags.ok ? ok(tags.value ?? []) : tags
    },
    fromForm(fields) {
      const tagging = fields.get('tagging')
      return tagging === undefined ? ok(undefined) : parseTagging(tagging, 'object')
    },
    headers: (count) => ({ 'x-amz-tagging-count': String(count) }),
  },
  acl: {
    fromHeaders: aclOfHeader,
    forCopy: aclOfHeader,
    fromForm: (fields) => cannedAcl(fields.get('acl')),
    // S3 reports an object's ACL on GetObjectAcl alone.
    headers: () => ({}),
  },
  // Object lock's headers need the bucket's configuration and the time: object-lock.ts reads them
  // (lockedAttributes) once these are collected.
  retention: {
    fromHeaders: () => ok(undefined),
    forCopy: () => ok(undefined),
    fromForm: () => ok(undefined),
    headers: ({ mode, untilMs }) =>
      mode === 'OFF'
        ? {}
        : {
            'x-amz-object-lock-mode': mode,
            'x-amz-object-lock-retain-until-date': new Date(untilMs).toISOString(),
          },
  },
  legalHold: {
    fromHeaders: () => ok(undefined),
    forCopy: () => ok(undefined),
    fromForm: () => ok(undefined),
    headers: () => ({ 'x-amz-object-lock-legal-hold': 'ON' }),
  },
}

function frontOf(name: AttributeName): AttributeFront<AttributeName> {
  return FRONTS[name] as AttributeFront<AttributeName>
}

/** The attributes one reading of a request names, as `{ attributes }` for its message (`{}` for
 * none). */
function collect(
  read: (front: AttributeFront<AttributeName>) => Named<AttributeName>,
): Result<{ attributes?: ObjectAttributes }> {
  const attributes: ObjectAttributes = {}
  for (const name of ATTRIBUTE_NAMES) {
    const named = read(frontOf(name))
    if (!named.ok) return named
    if (named.value !== undefined) (attributes as AnyAttributes)[name] = named.value
  }
  return ok(Object.keys(attributes).length === 0 ? {} : { attributes })
}

/** The attributes a write's headers name (PutObject, CreateMultipartUpload). */
export function requestAttributes(
  headers: Record<string, string>,
): Result<{ attributes?: ObjectAttributes }> {
  return collect((front) => front.fromHeaders(headers))
}

/** The attributes CopyObject's headers name; the others follow the copy rule. */
export function copyAttributes(
  headers: Record<string, string>,
): Result<{ attributes?: ObjectAttributes }> {
  return collect((front) => front.forCopy(headers))
}

/** The attributes a form upload's fields name. */
export function formAttributes(
  fields: ReadonlyMap<string, string>,
): Result<{ attributes?: ObjectAttributes }> {
  return collect((front) => front.fromForm(fields))
}

/** GET's and HEAD's headers of a version's attributes. */
export function attributeHeaders(summary: AttributeSummary | undefined): Record<string, string> {
  const headers: Record<string, string> = {}
  for (const name of ATTRIBUTE_NAMES) {
    const reported = summary?.[name]
    if (reported !== undefined) Object.assign(headers, frontOf(name).headers(reported))
  }
  return headers
}
