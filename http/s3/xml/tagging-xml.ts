/** @module The `Tagging` XML of PutObjectTagging, PutBucketTagging and their reads; the tags'
 * rules are protocol/tagging.ts. */
import { fail, ok, type Result } from '../../../protocol/errors.js'
import { validateTags, type Tag, type TagOwner } from '../../../protocol/tagging.js'
import { newDocument, parseXmlBody, serialize, text, xmlChildren, xmlChildText } from './s3-xml.js'

/** A PutObjectTagging or PutBucketTagging body:
 * `<Tagging><TagSet><Tag><Key>k</Key><Value>v</Value></Tag>...</TagSet></Tagging>`. */
export function parseTagging(xml: string | Uint8Array, owner: TagOwner): Result<Tag[]> {
  const root = parseXmlBody(xml, 'Tagging')
  if (!root.ok) return root
  const sets = xmlChildren(root.value, 'TagSet')
  const [set] = sets
  if (set === undefined || sets.length > 1) return fail('malformed_xml', 'one TagSet is required')
  if (typeof set === 'string') {
    return set.trim() === '' ? ok([]) : fail('malformed_xml', 'TagSet holds text')
  }
  const tags: Tag[] = []
  for (const element of xmlChildren(set, 'Tag')) {
    if (typeof element === 'string') return fail('malformed_xml', 'Tag without Key and Value')
    const key = xmlChildText(element, 'Key')
    if (!key.ok) return key
    const value = xmlChildText(element, 'Value')
    if (!value.ok) return value
    if (key.value === undefined || value.value === undefined) {
      return fail('malformed_xml', 'a Tag needs a Key and a Value')
    }
    tags.push({ key: key.value, value: value.value })
  }
  const valid = validateTags(tags, owner)
  return valid.ok ? ok(tags) : valid
}

/** GetObjectTagging's and GetBucketTagging's answer. */
export function taggingXml(tags: readonly Tag[]): string {
  const root = newDocument('Tagging', true)
  const set = root.ele('TagSet')
  for (const { key, value } of tags) {
    const tag = set.ele('Tag')
    text(tag, 'Key', key)
    text(tag, 'Value', value)
  }
  return serialize(root)
}
