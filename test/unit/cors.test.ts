/** @module Unit tests of protocol/cors.ts. Goal: PutBucketCors bodies are accepted and refused as
 * Amazon S3 accepts and refuses them (malformed_xml for the schema, invalid_request with S3's
 * message for the meaning), GetBucketCors gives back exactly what was put, and rules match as S3
 * matches them (first rule wins; origin exact or with one `*`; method; every requested header,
 * case-insensitively). Method: hand-written bodies through the parser, the writer's output through
 * the parser again, and matching on small configurations. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import {
  corsHeaders,
  matchCorsRule,
  requestedHeaders,
  validateCorsConfiguration,
  wildcardMatch,
  type CorsConfiguration,
  type CorsRule,
} from '../../protocol/cors.js'
import { corsConfigurationXml, parseCorsConfiguration } from '../../http/s3/xml/cors-xml.js'
import type { ErrorCode } from '../../protocol/errors.js'
import { CORS_RULES_MAX } from '../../protocol/limits.js'

const NS = 'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"'

function body(rules: string): string {
  return `<CORSConfiguration ${NS}>${rules}</CORSConfiguration>`
}

function parsed(xml: string): CorsConfiguration {
  const result = parseCorsConfiguration(xml)
  if (!result.ok) throw new Error(`${result.code}: ${result.detail}`)
  return result.value
}

function refused(xml: string, code: ErrorCode, detail?: RegExp): void {
  const result = parseCorsConfiguration(xml)
  assert.not.ok(result.ok, xml)
  if (result.ok) return
  assert.is(result.code, code, `${xml}: ${result.detail}`)
  if (detail !== undefined) assert.match(result.detail, detail)
}

const RULE = '<AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod>'

test('a full configuration parses into rules in order, values trimmed', () => {
  const config = parsed(
    body(
      '<CORSRule><ID>first</ID><AllowedOrigin>http://*.example.com</AllowedOrigin>' +
        '<AllowedOrigin>https://app.test</AllowedOrigin><AllowedMethod>PUT</AllowedMethod>' +
        '<AllowedMethod>GET</AllowedMethod><AllowedHeader>*</AllowedHeader>' +
        '<ExposeHeader>ETag</ExposeHeader><ExposeHeader>x-amz-version-id</ExposeHeader>' +
        '<MaxAgeSeconds> 3000 </MaxAgeSeconds></CORSRule>\n  ' +
        `<CORSRule>\n  <AllowedOrigin>\n *\n</AllowedOrigin>\n <AllowedMethod>HEAD</AllowedMethod>
        </CORSRule>`,
    ),
  )
  assert.equal(config, {
    rules: [
      {
        id: 'first',
        allowedOrigins: ['http://*.example.com', 'https://app.test'],
        allowedMethods: ['PUT', 'GET'],
        allowedHeaders: ['*'],
        exposeHeaders: ['ETag', 'x-amz-version-id'],
        maxAgeSeconds: 3000,
      },
      { allowedOrigins: ['*'], allowedMethods: ['HEAD'], allowedHeaders: [], exposeHeaders: [] },
    ],
  })
})

test('GetBucketCors writes S3 element names and order, and reads back to the same rules', () => {
  const config: CorsConfiguration = {
    rules: [
      {
        id: 'a&b <rule>',
        allowedOrigins: ['https://one.test', ''],
        allowedMethods: ['GET', 'DELETE'],
        allowedHeaders: ['x-amz-*', 'Content-Type'],
        exposeHeaders: ['ETag'],
        maxAgeSeconds: 0,
      },
      { allowedOrigins: ['*'], allowedMethods: ['POST'], allowedHeaders: [], exposeHeaders: [] },
    ],
  }
  const xml = corsConfigurationXml(config)
  assert.is(
    xml,
    `<?xml version="1.0" encoding="UTF-8"?><CORSConfiguration ${NS}><CORSRule>` +
      '<ID>a&amp;b &lt;rule&gt;</ID><AllowedHeader>x-amz-*</AllowedHeader>' +
      '<AllowedHeader>Content-Type</AllowedHeader><AllowedMethod>GET</AllowedMethod>' +
      '<AllowedMethod>DELETE</AllowedMethod><AllowedOrigin>https://one.test</AllowedOrigin>' +
      '<AllowedOrigin></AllowedOrigin><ExposeHeader>ETag</ExposeHeader>' +
      '<MaxAgeSeconds>0</MaxAgeSeconds></CORSRule><CORSRule><AllowedMethod>POST</AllowedMethod>' +
      '<AllowedOrigin>*</AllowedOrigin></CORSRule></CORSConfiguration>',
  )
  assert.equal(parsed(xml), config)
})

test('bodies outside the schema are MalformedXML', () => {
  refused('', 'malformed_xml')
  refused('not xml', 'malformed_xml')
  refused(`<CORSConfig>${RULE}</CORSConfig>`, 'malformed_xml')
  refused(body(''), 'malformed_xml', /no CORSRule/)
  refused('<CORSConfiguration/>', 'malformed_xml')
  refused(body('<CORSRule/>'), 'malformed_xml')
  refused(body('<CORSRule><AllowedMethod>GET</AllowedMethod></CORSRule>'), 'malformed_xml')
  refused(body('<CORSRule><AllowedOrigin>*</AllowedOrigin></CORSRule>'), 'malformed_xml')
  refused(body(`<CORSRule>${RULE}<Color>red</Color></CORSRule>`), 'malformed_xml', /Color/)
  refused(body(`<CORSRule>${RULE}</CORSRule><Extra/>`), 'malformed_xml', /Extra/)
  refused(body(`<CORSRule>${RULE} stray text</CORSRule>`), 'malformed_xml')
  refused(body(`<CORSRule>${RULE}<ID>a</ID><ID>b</ID></CORSRule>`), 'malformed_xml')
  for (const age of ['abc', '-1', '1.5', '', '99999999999', '2147483648']) {
    const rule = `<CORSRule>${RULE}<MaxAgeSeconds>${age}</MaxAgeSeconds></CORSRule>`
    refused(body(rule), 'malformed_xml', /MaxAgeSeconds/)
  }
  const nested = '<AllowedOrigin><Host>a</Host></AllowedOrigin><AllowedMethod>GET</AllowedMethod>'
  refused(body(`<CORSRule>${nested}</CORSRule>`), 'malformed_xml')
  refused(`<!DOCTYPE x [<!ENTITY a "b">]>${body(`<CORSRule>${RULE}</CORSRule>`)}`, 'malformed_xml')
  const largest = `<CORSRule>${RULE}<MaxAgeSeconds>2147483647</MaxAgeSeconds></CORSRule>`
  assert.is(parsed(body(largest)).rules[0]?.maxAgeSeconds, 2147483647)
})

test('well-formed bodies S3 refuses on their meaning are InvalidRequest with its message', () => {
  const origin = '<AllowedOrigin>*</AllowedOrigin>'
  for (const method of ['PATCH', 'get', 'OPTIONS', '']) {
    refused(
      body(`<CORSRule>${origin}<AllowedMethod>${method}</AllowedMethod></CORSRule>`),
      'invalid_request',
      new RegExp(`^Found unsupported HTTP method in CORS config. Unsupported method is ${method}$`),
    )
  }
  const get = '<AllowedMethod>GET</AllowedMethod>'
  refused(
    body(`<CORSRule><AllowedOrigin>http://*.*.example.com</AllowedOrigin>${get}</CORSRule>`),
    'invalid_request',
    /^AllowedOrigin "http:\/\/\*\.\*\.example\.com" can not have more than one wildcard\.$/,
  )
  refused(
    body(`<CORSRule>${RULE}<AllowedHeader>x-*-*</AllowedHeader></CORSRule>`),
    'invalid_request',
    /^AllowedHeader "x-\*-\*" can not have more than one wildcard\.$/,
  )
  refused(
    body(`<CORSRule>${RULE}<ExposeHeader>*</ExposeHeader></CORSRule>`),
    'invalid_request',
    /^ExposeHeader "\*" contains wildcard\. We currently do not support wildcard for ExposeHeader/,
  )
  refused(body(`<CORSRule>${RULE}<ExposeHeader>a b</ExposeHeader></CORSRule>`), 'invalid_request')
  refused(body(`<CORSRule>${RULE}<AllowedHeader>a:b</AllowedHeader></CORSRule>`), 'invalid_request')
  refused(body(`<CORSRule>${RULE}<AllowedHeader></AllowedHeader></CORSRule>`), 'invalid_request')
  refused(
    body(`<CORSRule><AllowedOrigin>http://bad origin</AllowedOrigin>${get}</CORSRule>`),
    'invalid_request',
  )
  refused(body(`<CORSRule>${RULE}<ID>${'i'.repeat(256)}</ID></CORSRule>`), 'invalid_argument')
  assert.is(parsed(body(`<CORSRule>${RULE}<ID>${'i'.repeat(255)}</ID></CORSRule>`)).rules.length, 1)
  const rules = `<CORSRule>${RULE}</CORSRule>`
  assert.is(parsed(body(rules.repeat(CORS_RULES_MAX))).rules.length, CORS_RULES_MAX)
  refused(
    body(rules.repeat(CORS_RULES_MAX + 1)),
    'invalid_request',
    /^The number of CORS rules should not exceed allowed limit of 100 rules\.$/,
  )
})

test('an empty AllowedOrigin is accepted, as S3 accepts it, and matches nothing', () => {
  const config = parsed(
    body('<CORSRule><AllowedOrigin/><AllowedMethod>GET</AllowedMethod></CORSRule>'),
  )
  assert.equal(config.rules[0]?.allowedOrigins, [''])
  assert.is(
    matchCorsRule(config, { origin: 'http://a.test', method: 'GET', headers: [] }),
    undefined,
  )
})

test('validation refuses what the parser refuses, for the store to assert on', () => {
  const good: CorsRule = {
    allowedOrigins: ['*'],
    allowedMethods: ['GET'],
    allowedHeaders: [],
    exposeHeaders: [],
  }
  assert.ok(validateCorsConfiguration({ rules: [good] }).ok)
  assert.not.ok(validateCorsConfiguration({ rules: [] }).ok)
  assert.not.ok(validateCorsConfiguration({ rules: [{ ...good, maxAgeSeconds: -1 }] }).ok)
  assert.not.ok(validateCorsConfiguration({ rules: [{ ...good, maxAgeSeconds: 0.5 }] }).ok)
  assert.not.ok(validateCorsConfiguration({ rules: [{ ...good, id: 'a\nb' }] }).ok)
  assert.not.ok(validateCorsConfiguration({ rules: new Array<CorsRule>(101).fill(good) }).ok)
})

test('origins match exactly or around their one wildcard', () => {
  assert.ok(wildcardMatch('http://*.example.com', 'http://app.example.com'))
  assert.ok(wildcardMatch('http://*.example.com', 'http://a.b.example.com'))
  assert.not.ok(wildcardMatch('http://*.example.com', 'https://app.example.com'))
  assert.not.ok(wildcardMatch('http://*.example.com', 'http://example.com'))
  assert.not.ok(wildcardMatch('http://*.example.com', 'http://app.example.com.evil.test'))
  assert.not.ok(wildcardMatch('http://*.example.com', 'http://app.example.co'))
  assert.ok(wildcardMatch('*', ''))
  assert.ok(wildcardMatch('http://a.test', 'http://a.test'))
  assert.not.ok(wildcardMatch('http://a.test', 'http://A.test'))
  assert.not.ok(wildcardMatch('ab*ba', 'aba'), 'head and tail may not overlap')
})

function config(...rules: Partial<CorsRule>[]): CorsConfiguration {
  return {
    rules: rules.map((rule) => ({
      allowedOrigins: ['*'],
      allowedMethods: ['GET'],
      allowedHeaders: [],
      exposeHeaders: [],
      ...rule,
    })),
  }
}

test('the first rule that allows origin, method and every requested header wins', () => {
  const rules = config(
    { id: 'one', allowedOrigins: ['http://*.example.com'], allowedMethods: ['PUT'] },
    { id: 'two', allowedOrigins: ['http://app.example.com'], allowedMethods: ['PUT', 'GET'] },
    { id: 'three', allowedOrigins: ['*'], allowedMethods: ['GET'], allowedHeaders: ['X-Amz-*'] },
  )
  const at = (origin: string, method: string, headers: string[] = []): string | undefined =>
    matchCorsRule(rules, { origin, method, headers })?.id
  assert.is(at('http://app.example.com', 'PUT'), 'one')
  assert.is(at('http://app.example.com', 'GET'), 'two')
  assert.is(at('http://other.test', 'GET'), 'three')
  assert.is(at('http://other.test', 'PUT'), undefined)
  assert.is(at('http://other.test', 'DELETE'), undefined)
  assert.is(at('http://other.test', 'GET', ['x-amz-date', 'x-amz-meta-a']), 'three')
  assert.is(at('http://app.example.com', 'PUT', ['x-amz-date']), undefined, 'one allows none')
  assert.is(at('http://other.test', 'GET', ['x-amz-date', 'content-type']), undefined)
  const anyHeader = config({ allowedHeaders: ['*'] })
  const request = { origin: 'http://a.test', method: 'GET', headers: ['authorization', 'x-y'] }
  assert.ok(matchCorsRule(anyHeader, request))
})

test('requested headers are split, trimmed and lower-cased', () => {
  assert.equal(requestedHeaders(undefined), [])
  assert.equal(requestedHeaders(''), [])
  assert.equal(requestedHeaders(' Content-Type ,X-Amz-Date,, '), ['content-type', 'x-amz-date'])
})

test('answers: `*` for an any-origin rule, else the origin with credentials', () => {
  const [any, named] = config(
    { allowedMethods: ['GET', 'HEAD'], exposeHeaders: ['ETag', 'x-amz-version-id'] },
    { allowedOrigins: ['http://*.example.com'], maxAgeSeconds: 600 },
  ).rules
  assert.ok(any !== undefined && named !== undefined)
  const preflight = { origin: 'http://a.example.com', method: 'GET', headers: ['content-type'] }
  assert.equal(corsHeaders(any, preflight), {
    'access-control-allow-origin': '*',
    'access-control-allow-methods': 'GET, HEAD',
    'access-control-allow-headers': 'content-type',
    'access-control-expose-headers': 'ETag, x-amz-version-id',
    vary: 'Origin, Access-Control-Request-Headers, Access-Control-Request-Method',
  })
  assert.equal(corsHeaders(named, { ...preflight, headers: [] }), {
    'access-control-allow-origin': 'http://a.example.com',
    'access-control-allow-credentials': 'true',
    'access-control-allow-methods': 'GET',
    'access-control-max-age': '600',
    vary: 'Origin, Access-Control-Request-Headers, Access-Control-Request-Method',
  })
})

test.run()
