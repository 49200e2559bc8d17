/** @module The objects of a listing page as columns, and the way between them and summaries. */
import assert from 'node:assert/strict'
import type { z } from 'zod'
import type { ObjectSummary } from './objects.js'
import type { objectColumns as objectColumnsSchema } from './wire/replica-answers.js'

/** A listing page's objects, a field per array: object i is index i of each. A page crosses two
 * thread hops (store, coordinator, ingress), and structured clone writes every object's field
 * names again, so a page clones several times faster as columns than as objects. */
export type ObjectColumns = z.infer<typeof objectColumnsSchema>

export function objectColumns(
  summaries: readonly ObjectSummary[],
  withContentType = false,
): ObjectColumns {
  const columns: ObjectColumns = { keys: [], sizes: [], etags: [], lastModifiedMs: [] }
  if (withContentType) columns.contentTypes = []
  for (const summary of summaries) addObject(columns, summary)
  return columns
}

export function addObject(columns: ObjectColumns, summary: ObjectSummary): void {
  columns.keys.push(summary.key)
  columns.sizes.push(summary.size)
  columns.etags.push(summary.etag)
  columns.lastModifiedMs.push(summary.lastModifiedMs)
  if (columns.contentTypes !== undefined) {
    assert(summary.contentType !== undefined, 'a listing with content types needs every one')
    columns.contentTypes.push(summary.contentType)
  }
}

export function objectAt(columns: ObjectColumns, index: number): ObjectSummary {
  const key = columns.keys[index]
  const size = columns.sizes[index]
  const etag = columns.etags[index]
  const lastModifiedMs = columns.lastModifiedMs[index]
  assert(key !== undefined && size !== undefined && etag !== undefined, 'no such object')
  assert(lastModifiedMs !== undefined, 'no such object')
  const contentType = columns.contentTypes?.[index]
  return contentType === undefined
    ? { key, size, etag, lastModifiedMs }
    : { key, size, etag, lastModifiedMs, contentType }
}

export function objectSummaries(columns: ObjectColumns): ObjectSummary[] {
  return columns.keys.map((_, index) => objectAt(columns, index))
}
