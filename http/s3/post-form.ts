/** @module The multipart/form-data body of a browser form upload (S3's POST Object), read with
 * busboy: the text fields up to the part named `file` (lower-cased names; S3 ignores fields after
 * the file), then the file as a stream that is read only once the form is authorized, so the body
 * is never held whole (busboy stops reading the socket while the file stream is not drained).
 * Bounded as S3 bounds it: at most 20 KiB per field and a few dozen fields before the file. */
import busboy from 'busboy'
import type { Readable } from 'node:stream'
import { fail, ok, type Result } from '../../protocol/errors.js'
import type { S3Exchange } from './exchange.js'

export interface PostForm {
  fields: Map<string, string>
  file: Readable
  /** The file part's file name, for `${filename}` in the key. */
  filename: string
}

/** S3 refuses a form whose fields before the file exceed 20 KiB; each field is bounded so, and
 * their number by FIELDS_MAX (more than the policy fields, metadata and tags a form carries). */
const FIELD_BYTES_MAX = 20 * 1024
const FIELDS_MAX = 64

function malformed(detail: string): Result<never> {
  return fail('malformed_post_request', detail)
}

/** Resolves when the file part begins (its stream not yet read), or with the failure that came
 * first: a malformed body, a field over the bounds, or a form without a file. */
export function readPostForm(ex: S3Exchange): Promise<Result<PostForm>> {
  return new Promise((resolve) => {
    let settled = false
    const settle = (result: Result<PostForm>): void => {
      if (settled) return
      settled = true
      resolve(result)
    }
    let form: busboy.Busboy
    try {
      form = busboy({
        headers: ex.incoming.headers,
        defParamCharset: 'utf8',
        limits: { fieldSize: FIELD_BYTES_MAX, fields: FIELDS_MAX, files: 1, headerPairs: 16 },
      })
    } catch (error) {
      settle(malformed(error instanceof Error ? error.message : 'not multipart/form-data'))
      return
    }
    const fields = new Map<string, string>()
    form.on('field', (name, value, info) => {
      if (info.valueTruncated || info.nameTruncated) {
        settle(malformed('Your POST request fields preceding the upload file were too large.'))
      }
      if (!settled) fields.set(name.toLowerCase(), value)
    })
    form.on('fieldsLimit', () => settle(malformed('Too many fields in the POST request.')))
    form.on('file', (name, stream, info) => {
      if (settled || name.toLowerCase() !== 'file') {
        stream.resume()
        return
      }
      settle(ok({ fields, file: stream, filename: info.filename ?? '' }))
    })
    form.on('close', () => {
      ex.bodyConsumed = true
      settle(fail('invalid_argument', 'POST requires exactly one file upload per request.'))
    })
    form.on('error', (error: unknown) => {
      settle(malformed(error instanceof Error ? error.message : 'unreadable form'))
    })
    // A client that goes away mid-body fails the file stream, so its upload is aborted.
    ex.incoming.once('close', () => {
      if (!ex.incoming.complete) form.destroy(new Error('the client went away mid-body'))
    })
    ex.incoming.pipe(form)
  })
}
