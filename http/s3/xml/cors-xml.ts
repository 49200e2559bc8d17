/** @module The XML codec of bucket CORS: the body of PutBucketCors and the answer of
 * GetBucketCors. A body outside S3's schema is malformed_xml; what it means is validated by
 * protocol/cors.ts. */
import assert from 'node:assert/strict'
import {
  MAX_AGE_SECONDS_MAX,
  tooManyRules,
  validateCorsConfiguration,
  type CorsConfiguration,
  type CorsMethod,
  type CorsRule,
} from '../../../protocol/cors.js'
import { fail, ok, type Result } from '../../../protocol/errors.js'
import { CORS_RULES_MAX } from '../../../protocol/limits.js'
import {
  parseXmlBody,
  S3_NAMESPACE,
  xmlChildren,
  xmlText,
  type XmlElement,
  type XmlNode,
} from './s3-xml.js'
import { XmlWriter } from './xml-writer.js'

const RULE_ELEMENTS = new Set([
  'ID',
  'AllowedOrigin',
  'AllowedMethod',
  'AllowedHeader',
  'ExposeHeader',
  'MaxAgeSeconds',
])
const TEXT = '#text'

/** Whitespace between elements is fine; any other text beside them is not S3's schema. */
function checkChildren(element: XmlElement, allowed: ReadonlySet<string>): Result<null> {
  for (const [name, value] of Object.entries(element)) {
    if (name === TEXT) {
      const parts = Array.isArray(value) ? value : [value]
      if (parts.every((part) => typeof part === 'string' && part.trim() === '')) continue
      return fail('malformed_xml', 'text beside elements')
    }
    if (!allowed.has(name)) return fail('malformed_xml', `unexpected element ${name}`)
  }
  return ok(null)
}

/** The trimmed texts of every child `name`; malformed_xml if one holds elements. */
function childTexts(element: XmlElement, name: string): Result<string[]> {
  const texts: string[] = []
  for (const child of xmlChildren(element, name)) {
    const value = xmlText(child)
    if (value === undefined) return fail('malformed_xml', `${name} must hold text`)
    texts.push(value.trim())
  }
  return ok(texts)
}

function atMostOne(texts: string[], name: string): Result<string | undefined> {
  if (texts.length > 1) return fail('malformed_xml', `more than one ${name}`)
  return ok(texts[0])
}

function parseMaxAge(text: string | undefined): Result<number | undefined> {
  if (text === undefined) return ok(undefined)
  if (!/^\d{1,10}$/.test(text)) return fail('malformed_xml', 'MaxAgeSeconds is not an integer')
  const value = Number(text)
  if (value > MAX_AGE_SECONDS_MAX) return fail('malformed_xml', 'MaxAgeSeconds is out of range')
  return ok(value)
}

function parseRule(node: XmlNode): Result<CorsRule> {
  if (typeof node === 'string') return fail('malformed_xml', 'CORSRule without elements')
  const children = checkChildren(node, RULE_ELEMENTS)
  if (!children.ok) return children
  const texts: Record<string, string[]> = {}
  for (const name of RULE_ELEMENTS) {
    const values = childTexts(node, name)
    if (!values.ok) return values
    texts[name] = values.value
  }
  const id = atMostOne(texts['ID'] ?? [], 'ID')
  if (!id.ok) return id
  const maxAgeText = atMostOne(texts['MaxAgeSeconds'] ?? [], 'MaxAgeSeconds')
  if (!maxAgeText.ok) return maxAgeText
  const maxAge = parseMaxAge(maxAgeText.value)
  if (!maxAge.ok) return maxAge
  const rule: CorsRule = {
    allowedOrigins: texts['AllowedOrigin'] ?? [],
    // Checked by validateCorsConfiguration, which reports an unsupported method by name.
    allowedMethods: (texts['AllowedMethod'] ?? []) as CorsMethod[],
    allowedHeaders: texts['AllowedHeader'] ?? [],
    exposeHeaders: texts['ExposeHeader'] ?? [],
  }
  if (id.value !== undefined) rule.id = id.value
  if (maxAge.value !== undefined) rule.maxAgeSeconds = maxAge.value
  return ok(rule)
}

/** Parses and validates a PutBucketCors body. The caller bounds its size (CORS_BODY_BYTES_MAX). */
export function parseCorsConfiguration(xml: string | Uint8Array): Result<CorsConfiguration> {
  const root = parseXmlBody(xml, 'CORSConfiguration')
  if (!root.ok) return root
  const children = checkChildren(root.value, new Set(['CORSRule']))
  if (!children.ok) return children
  const nodes = xmlChildren(root.value, 'CORSRule')
  if (nodes.length > CORS_RULES_MAX) return tooManyRules()
  const rules: CorsRule[] = []
  for (const node of nodes) {
    const rule = parseRule(node)
    if (!rule.ok) return rule
    rules.push(rule.value)
  }
  assert(rules.length === nodes.length)
  return validateCorsConfiguration({ rules })
}

/** The body of GetBucketCors, elements in the order S3 writes them. Built with XmlWriter, which
 * escapes text exactly as the xmlbuilder2 documents of s3-xml.ts do. */
export function corsConfigurationXml(config: CorsConfiguration): string {
  assert(config.rules.length > 0 && config.rules.length <= CORS_RULES_MAX)
  const xml = new XmlWriter().open('CORSConfiguration', S3_NAMESPACE)
  for (const rule of config.rules) {
    xml.open('CORSRule')
    if (rule.id !== undefined) xml.text('ID', rule.id)
    for (const header of rule.allowedHeaders) xml.text('AllowedHeader', header)
    for (const method of rule.allowedMethods) xml.text('AllowedMethod', method)
    for (const origin of rule.allowedOrigins) xml.text('AllowedOrigin', origin)
    for (const header of rule.exposeHeaders) xml.text('ExposeHeader', header)
    if (rule.maxAgeSeconds !== undefined) xml.text('MaxAgeSeconds', rule.maxAgeSeconds)
    xml.close('CORSRule')
  }
  return xml.close('CORSConfiguration').end()
}
