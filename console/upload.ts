/** @module Uploads from the browser through the S3 API: one PutObject for a small file, a multipart
 * upload for a large one (parts of PART_BYTES, at most PARTS_AT_ONCE in flight, aborted when a part
 * fails, so no upload is left behind). XMLHttpRequest rather than fetch: only it reports the
 * progress of a request's body. Each request carries the session's CSRF token. */
import { csrfToken, parseXml, s3, s3Error, s3Path, textOf } from './common.js'

/** Files above this go as a multipart upload. */
export const MULTIPART_FROM_BYTES = 16 * 1024 * 1024
const PART_BYTES = 8 * 1024 * 1024
const PARTS_AT_ONCE = 3
/** A request that sends nothing for this long is given up. */
const STALL_MS = 120_000

/** PUTs `body` to `url`, reporting the bytes sent; resolves with the answer's ETag. */
function put(url: string, body: Blob, onSent: (bytes: number) => void): Promise<string> {
  return new Promise((resolve, reject) => {
    const request = new XMLHttpRequest()
    request.open('PUT', url)
    request.setRequestHeader('x-csrf-token', csrfToken())
    request.timeout = STALL_MS
    request.upload.addEventListener('progress', (event) => onSent(event.loaded))
    request.addEventListener('load', () => {
      if (request.status >= 200 && request.status < 300) {
        resolve(request.getResponseHeader('etag') ?? '')
      } else {
        reject(s3Error(request.status, request.responseText))
      }
    })
    request.addEventListener('error', () => reject(new Error('the upload failed (network)')))
    request.addEventListener('timeout', () => reject(new Error('the upload stalled')))
    request.send(body)
  })
}

export async function uploadFile(
  bucket: string,
  key: string,
  file: File,
  onSent: (bytes: number) => void,
): Promise<void> {
  const url = s3Path(bucket, key)
  if (file.size <= MULTIPART_FROM_BYTES) {
    await put(url, file, onSent)
    return
  }
  const created = await s3(url, {
    method: 'POST',
    query: { uploads: '' },
    headers: file.type === '' ? {} : { 'content-type': file.type },
  })
  const uploadId = textOf(parseXml(await created.text()).documentElement, 'UploadId')
  const count = Math.ceil(file.size / PART_BYTES)
  const sent = new Array<number>(count).fill(0)
  const etags = new Array<string>(count).fill('')
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < count) {
      const index = next++
      const part = file.slice(index * PART_BYTES, Math.min(file.size, (index + 1) * PART_BYTES))
      const query = new URLSearchParams({ partNumber: String(index + 1), uploadId })
      etags[index] = await put(`${url}?${query.toString()}`, part, (bytes) => {
        sent[index] = bytes
        onSent(sent.reduce((sum, value) => sum + value, 0))
      })
    }
  }
  try {
    await Promise.all(Array.from({ length: Math.min(PARTS_AT_ONCE, count) }, worker))
    const parts = etags
      .map(
        (etag, index) => `<Part><PartNumber>${index + 1}</PartNumber><ETag>${etag}</ETag></Part>`,
      )
      .join('')
    const body = `<CompleteMultipartUpload>${parts}</CompleteMultipartUpload>`
    const completed = await s3(url, { method: 'POST', query: { uploadId }, body })
    // S3 may answer 200 with an error in the body once the upload has begun to complete.
    const answer = await completed.text()
    if (answer.includes('<Error>')) throw s3Error(500, answer)
  } catch (error) {
    await s3(url, { method: 'DELETE', query: { uploadId } }).catch(() => undefined)
    throw error
  }
}
