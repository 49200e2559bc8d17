/** @module The `LifecycleConfiguration` XML of PutBucketLifecycleConfiguration and its read; the
 * rules are protocol/s3-rules/lifecycle.ts's. Transitions to other storage classes are refused as
 * not implemented (every object here is STANDARD), never dropped. */
import { fail, ok, type Result } from '../../../protocol/errors.js'
import {
  validateLifecycleConfiguration,
  type LifecycleConfiguration,
  type LifecycleFilter,
  type LifecycleRule,
} from '../../../protocol/s3-rules/lifecycle.js'
import type { Tag } from '../../../protocol/tagging.js'
import {
  newDocument,
  parseXmlBody,
  serialize,
  text,
  xmlChildren,
  xmlChildElement,
  xmlChildInteger,
  xmlChildText,
  type XMLBuilder,
  type XmlElement,
} from './s3-xml.js'

const TRANSITIONS = ['Transition', 'NoncurrentVersionTransition']

function tagOf(node: XmlElement): Result<Tag> {
  const key = xmlChildText(node, 'Key')
  if (!key.ok) return key
  const value = xmlChildText(node, 'Value')
  if (!value.ok) return value
  if (key.value === undefined) return fail('malformed_xml', 'a Tag needs a Key')
  return ok({ key: key.value, value: value.value ?? '' })
}

/** A filter's conditions, alone or under `And`, added to `filter`: how many it named. */
function conditions(parent: XmlElement, filter: LifecycleFilter): Result<number> {
  let named = 0
  const prefix = xmlChildText(parent, 'Prefix')
  if (!prefix.ok) return prefix
  if (prefix.value !== undefined) {
    filter.prefix = prefix.value
    named += 1
  }
  for (const node of xmlChildren(parent, 'Tag')) {
    if (typeof node === 'string') return fail('malformed_xml', 'a Tag needs a Key and a Value')
    const tag = tagOf(node)
    if (!tag.ok) return tag
    filter.tags.push(tag.value)
    named += 1
  }
  const greater = xmlChildInteger(parent, 'ObjectSizeGreaterThan')
  if (!greater.ok) return greater
  const less = xmlChildInteger(parent, 'ObjectSizeLessThan')
  if (!less.ok) return less
  if (greater.value !== null) {
    filter.sizeGreaterThan = greater.value
    named += 1
  }
  if (less.value !== null) {
    filter.sizeLessThan = less.value
    named += 1
  }
  return ok(named)
}

function filterOf(rule: XmlElement): Result<LifecycleFilter> {
  const filter: LifecycleFilter = {
    prefix: '',
    tags: [],
    sizeGreaterThan: null,
    sizeLessThan: null,
  }
  const legacy = xmlChildText(rule, 'Prefix')
  if (!legacy.ok) return legacy
  const node = xmlChildElement(rule, 'Filter')
  if (!node.ok) return node
  if (legacy.value !== undefined && node.value !== null) {
    return fail('malformed_xml', 'a Rule has a Prefix or a Filter, not both')
  }
  if (legacy.value !== undefined) filter.prefix = legacy.value
  if (node.value === null) return ok(filter)
  const direct = conditions(node.value, filter)
  if (!direct.ok) return direct
  const and = xmlChildElement(node.value, 'And')
  if (!and.ok) return and
  if (and.value === null) {
    if (direct.value > 1) return fail('malformed_xml', 'a Filter of several conditions needs And')
    return ok(filter)
  }
  if (direct.value > 0) return fail('malformed_xml', 'a Filter with And has its conditions in it')
  const inner = conditions(and.value, filter)
  return inner.ok ? ok(filter) : inner
}

function ruleOf(node: XmlElement): Result<LifecycleRule> {
  for (const name of TRANSITIONS) {
    if (xmlChildren(node, name).length > 0) {
      return fail(
        'not_implemented',
        `${name}: transitions to other storage classes are not implemented`,
      )
    }
  }
  const id = xmlChildText(node, 'ID')
  if (!id.ok) return id
  const status = xmlChildText(node, 'Status')
  if (!status.ok) return status
  const state = status.value?.trim()
  if (state !== 'Enabled' && state !== 'Disabled') {
    return fail('malformed_xml', 'Status is Enabled or Disabled')
  }
  const filter = filterOf(node)
  if (!filter.ok) return filter
  const rule: LifecycleRule = {
    id: id.value ?? null,
    enabled: state === 'Enabled',
    filter: filter.value,
    expiration: null,
    expiredObjectDeleteMarker: false,
    noncurrentExpiration: null,
    abortUploadsAfterDays: null,
  }
  const expiration = xmlChildElement(node, 'Expiration')
  if (!expiration.ok) return expiration
  if (expiration.value !== null) {
    const days = xmlChildInteger(expiration.value, 'Days')
    if (!days.ok) return days
    const date = xmlChildText(expiration.value, 'Date')
    if (!date.ok) return date
    const marker = xmlChildText(expiration.value, 'ExpiredObjectDeleteMarker')
    if (!marker.ok) return marker
    const dateMs = date.value === undefined ? null : Date.parse(date.value.trim())
    if (dateMs !== null && Number.isNaN(dateMs)) return fail('malformed_xml', 'Date is not a date')
    rule.expiredObjectDeleteMarker = marker.value?.trim() === 'true'
    if (days.value !== null || dateMs !== null) {
      rule.expiration = { days: days.value, dateMs }
    } else if (marker.value === undefined) {
      return fail('malformed_xml', 'an Expiration needs Days, Date or ExpiredObjectDeleteMarker')
    }
  }
  const noncurrent = xmlChildElement(node, 'NoncurrentVersionExpiration')
  if (!noncurrent.ok) return noncurrent
  if (noncurrent.value !== null) {
    const days = xmlChildInteger(noncurrent.value, 'NoncurrentDays')
    if (!days.ok) return days
    const kept = xmlChildInteger(noncurrent.value, 'NewerNoncurrentVersions')
    if (!kept.ok) return kept
    if (days.value === null) return fail('malformed_xml', 'NoncurrentDays is required')
    rule.noncurrentExpiration = { days: days.value, newerVersionsKept: kept.value }
  }
  const abort = xmlChildElement(node, 'AbortIncompleteMultipartUpload')
  if (!abort.ok) return abort
  if (abort.value !== null) {
    const days = xmlChildInteger(abort.value, 'DaysAfterInitiation')
    if (!days.ok) return days
    if (days.value === null) return fail('malformed_xml', 'DaysAfterInitiation is required')
    rule.abortUploadsAfterDays = days.value
  }
  return ok(rule)
}

export function parseLifecycleConfiguration(xml: Uint8Array): Result<LifecycleConfiguration> {
  const root = parseXmlBody(xml, 'LifecycleConfiguration')
  if (!root.ok) return root
  const rules: LifecycleRule[] = []
  for (const node of xmlChildren(root.value, 'Rule')) {
    if (typeof node === 'string') return fail('malformed_xml', 'a Rule needs a Status')
    const rule = ruleOf(node)
    if (!rule.ok) return rule
    rules.push(rule.value)
  }
  return validateLifecycleConfiguration({ rules })
}

function filterXml(rule: XMLBuilder, filter: LifecycleFilter): void {
  const node = rule.ele('Filter')
  const { prefix, tags, sizeGreaterThan, sizeLessThan } = filter
  const count =
    (prefix === '' ? 0 : 1) +
    tags.length +
    (sizeGreaterThan === null ? 0 : 1) +
    (sizeLessThan === null ? 0 : 1)
  const into = count > 1 ? node.ele('And') : node
  if (prefix !== '' || count === 0) text(into, 'Prefix', prefix)
  for (const tag of tags) {
    const element = into.ele('Tag')
    text(element, 'Key', tag.key)
    text(element, 'Value', tag.value)
  }
  if (sizeGreaterThan !== null) text(into, 'ObjectSizeGreaterThan', sizeGreaterThan)
  if (sizeLessThan !== null) text(into, 'ObjectSizeLessThan', sizeLessThan)
}

/** GetBucketLifecycleConfiguration's answer, in S3's element order. */
export function lifecycleConfigurationXml(config: LifecycleConfiguration): string {
  const root = newDocument('LifecycleConfiguration', true)
  for (const rule of config.rules) {
    const node = root.ele('Rule')
    if (rule.id !== null) text(node, 'ID', rule.id)
    filterXml(node, rule.filter)
    text(node, 'Status', rule.enabled ? 'Enabled' : 'Disabled')
    if (rule.expiration !== null || rule.expiredObjectDeleteMarker) {
      const expiration = node.ele('Expiration')
      if (rule.expiration?.days != null) text(expiration, 'Days', rule.expiration.days)
      if (rule.expiration?.dateMs != null) {
        text(expiration, 'Date', new Date(rule.expiration.dateMs).toISOString())
      }
      if (rule.expiredObjectDeleteMarker) text(expiration, 'ExpiredObjectDeleteMarker', true)
    }
    if (rule.noncurrentExpiration !== null) {
      const noncurrent = node.ele('NoncurrentVersionExpiration')
      text(noncurrent, 'NoncurrentDays', rule.noncurrentExpiration.days)
      const kept = rule.noncurrentExpiration.newerVersionsKept
      if (kept !== null) text(noncurrent, 'NewerNoncurrentVersions', kept)
    }
    if (rule.abortUploadsAfterDays !== null) {
      const abort = node.ele('AbortIncompleteMultipartUpload')
      text(abort, 'DaysAfterInitiation', rule.abortUploadsAfterDays)
    }
  }
  return serialize(root)
}
