/** @module The XML of object lock: `ObjectLockConfiguration` (Put/GetObjectLockConfiguration),
 * `Retention` (Put/GetObjectRetention) and `LegalHold` (Put/GetObjectLegalHold). The rules are
 * protocol/s3-rules/object-lock.ts's. */
import { fail, ok, type Result } from '../../../protocol/errors.js'
import {
  isRetentionMode,
  validateObjectLockConfiguration,
  type ObjectLockConfiguration,
  type RetentionMode,
} from '../../../protocol/s3-rules/object-lock.js'
import {
  newDocument,
  parseXmlBody,
  serialize,
  text,
  xmlChildElement,
  xmlChildInteger,
  xmlChildText,
} from './s3-xml.js'

export function parseObjectLockConfiguration(xml: Uint8Array): Result<ObjectLockConfiguration> {
  const root = parseXmlBody(xml, 'ObjectLockConfiguration')
  if (!root.ok) return root
  const enabled = xmlChildText(root.value, 'ObjectLockEnabled')
  if (!enabled.ok) return enabled
  if (enabled.value?.trim() !== 'Enabled') {
    return fail('malformed_xml', 'ObjectLockEnabled must be Enabled')
  }
  const rule = xmlChildElement(root.value, 'Rule')
  if (!rule.ok) return rule
  if (rule.value === null) return ok({ enabled: true, defaultRetention: null })
  const retention = xmlChildElement(rule.value, 'DefaultRetention')
  if (!retention.ok) return retention
  if (retention.value === null) return fail('malformed_xml', 'a Rule needs a DefaultRetention')
  const mode = xmlChildText(retention.value, 'Mode')
  if (!mode.ok) return mode
  const days = xmlChildInteger(retention.value, 'Days')
  if (!days.ok) return days
  const years = xmlChildInteger(retention.value, 'Years')
  if (!years.ok) return years
  const chosen = mode.value?.trim()
  if (!isRetentionMode(chosen)) return fail('malformed_xml', 'Mode is GOVERNANCE or COMPLIANCE')
  return validateObjectLockConfiguration({
    enabled: true,
    defaultRetention: { mode: chosen, days: days.value, years: years.value },
  })
}

export function objectLockConfigurationXml(config: ObjectLockConfiguration): string {
  const root = newDocument('ObjectLockConfiguration', true)
  text(root, 'ObjectLockEnabled', 'Enabled')
  const rule = config.defaultRetention
  if (rule !== null) {
    const retention = root.ele('Rule').ele('DefaultRetention')
    text(retention, 'Mode', rule.mode)
    if (rule.days !== null) text(retention, 'Days', rule.days)
    if (rule.years !== null) text(retention, 'Years', rule.years)
  }
  return serialize(root)
}

/** A PutObjectRetention body: a mode and a date, or neither (which removes the retention). */
export function parseRetention(
  xml: Uint8Array,
): Result<{ mode: RetentionMode; until: string } | null> {
  const root = parseXmlBody(xml, 'Retention')
  if (!root.ok) return root
  const mode = xmlChildText(root.value, 'Mode')
  if (!mode.ok) return mode
  const until = xmlChildText(root.value, 'RetainUntilDate')
  if (!until.ok) return until
  if (mode.value === undefined && until.value === undefined) return ok(null)
  const chosen = mode.value?.trim()
  if (!isRetentionMode(chosen)) return fail('malformed_xml', 'Mode is GOVERNANCE or COMPLIANCE')
  if (until.value === undefined) return fail('malformed_xml', 'a Retention needs a RetainUntilDate')
  return ok({ mode: chosen, until: until.value.trim() })
}

export function retentionXml(retention: { mode: RetentionMode; untilMs: number }): string {
  const root = newDocument('Retention', true)
  text(root, 'Mode', retention.mode)
  text(root, 'RetainUntilDate', new Date(retention.untilMs).toISOString())
  return serialize(root)
}

export function parseLegalHold(xml: Uint8Array): Result<boolean> {
  const root = parseXmlBody(xml, 'LegalHold')
  if (!root.ok) return root
  const status = xmlChildText(root.value, 'Status')
  if (!status.ok) return status
  const value = status.value?.trim()
  if (value !== 'ON' && value !== 'OFF') return fail('malformed_xml', 'Status is ON or OFF')
  return ok(value === 'ON')
}

export function legalHoldXml(on: boolean): string {
  const root = newDocument('LegalHold', true)
  text(root, 'Status', on ? 'ON' : 'OFF')
  return serialize(root)
}
