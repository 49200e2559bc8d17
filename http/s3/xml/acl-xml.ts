/** @module The `AccessControlPolicy` XML of GetBucketAcl and GetObjectAcl, and of a PutBucketAcl
 * or PutObjectAcl body. Only canned ACLs are held (protocol/s3-rules/access.ts says what each
 * grants), so a body is read back into the canned ACL whose grants it lists; a body granting
 * anything else (a user, write access) is refused as not implemented. */
import { fail, ok, type Result } from '../../../protocol/errors.js'
import {
  newDocument,
  parseXmlBody,
  serialize,
  text,
  xmlChildren,
  xmlChildText,
  type S3Owner,
  type XMLBuilder,
} from './s3-xml.js'

export type CannedAcl = 'private' | 'public-read' | 'authenticated-read'

const XSI = 'http://www.w3.org/2001/XMLSchema-instance'
const GROUPS: Record<string, CannedAcl> = {
  'http://acs.amazonaws.com/groups/global/AllUsers': 'public-read',
  'http://acs.amazonaws.com/groups/global/AuthenticatedUsers': 'authenticated-read',
}

function grantee(grant: XMLBuilder, type: 'CanonicalUser' | 'Group'): XMLBuilder {
  return grant.ele('Grantee', { 'xmlns:xsi': XSI, 'xsi:type': type })
}

/** What GetBucketAcl and GetObjectAcl answer: the owner's full control, and the group the canned
 * ACL grants reads to. */
export function aclXml(by: S3Owner, canned: CannedAcl): string {
  const root = newDocument('AccessControlPolicy', true)
  const owner = root.ele('Owner')
  text(owner, 'ID', by.id)
  text(owner, 'DisplayName', by.displayName)
  const list = root.ele('AccessControlList')
  const full = list.ele('Grant')
  const user = grantee(full, 'CanonicalUser')
  text(user, 'ID', by.id)
  text(user, 'DisplayName', by.displayName)
  text(full, 'Permission', 'FULL_CONTROL')
  const group = Object.keys(GROUPS).find((uri) => GROUPS[uri] === canned)
  if (group !== undefined) {
    const read = list.ele('Grant')
    text(grantee(read, 'Group'), 'URI', group)
    text(read, 'Permission', 'READ')
  }
  return serialize(root)
}

/** The canned ACL a PutBucketAcl or PutObjectAcl body amounts to: full control for a user (the
 * owner's grant), and READ for at most one of the groups AllUsers and AuthenticatedUsers. */
export function parseAclBody(xml: Uint8Array): Result<CannedAcl> {
  const root = parseXmlBody(xml, 'AccessControlPolicy')
  if (!root.ok) return fail('malformed_acl', root.detail)
  const [list] = xmlChildren(root.value, 'AccessControlList')
  if (list === undefined) return fail('malformed_acl', 'AccessControlList is required')
  let canned: CannedAcl = 'private'
  for (const grant of typeof list === 'string' ? [] : xmlChildren(list, 'Grant')) {
    if (typeof grant === 'string') return fail('malformed_acl', 'a Grant without a Grantee')
    const permission = xmlChildText(grant, 'Permission')
    const [who] = xmlChildren(grant, 'Grantee')
    if (!permission.ok || permission.value === undefined || who === undefined) {
      return fail('malformed_acl', 'a Grant needs a Grantee and a Permission')
    }
    if (typeof who === 'string') return fail('malformed_acl', 'a Grantee without an ID or URI')
    const uri = xmlChildText(who, 'URI')
    if (!uri.ok) return fail('malformed_acl', uri.detail)
    if (uri.value === undefined) {
      if (permission.value === 'FULL_CONTROL') continue
      return fail('not_implemented', 'ACL grants to users other than full control are not held')
    }
    const group = GROUPS[uri.value.trim()]
    if (group === undefined || permission.value !== 'READ' || canned !== 'private') {
      return fail(
        'not_implemented',
        'only the grants of the canned ACLs private, public-read ' +
          'and authenticated-read are held',
      )
    }
    canned = group
  }
  return ok(canned)
}
