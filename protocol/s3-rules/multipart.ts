/** @module S3's rules of multipart uploads, decided here whichever path stores the parts (a single
 * node's store, each replica of a cluster, the coordinator of a copied part):
 * - a part of an upload created with a checksum algorithm carries that checksum (a copied part
 *   without it gets it computed);
 * - CompleteMultipartUpload's list is checked in this order: part numbers ascending
 *   (InvalidPartOrder; a number may repeat, and its last entry counts, as S3 takes a part
 *   re-uploaded while its first upload was in flight), each part uploaded with that ETag and the
 *   checksums the list names (InvalidPart), every part but the last at least PART_BYTES_MIN
 *   (EntityTooSmall), then the upload's checksum: each stored part has it (InvalidPart), the
 *   object's is made from the parts' and must equal one the request names (BadDigest), and a
 *   COMPOSITE one needs each part's listed (InvalidRequest);
 * - the ETag is the MD5 of the parts' binary MD5s, then `-` and the part count. */
import { createHash } from 'node:crypto'
import { fail, ok, type Result } from '../errors.js'
import { PART_BYTES_MIN } from '../limits.js'
import type { CompletedPart } from '../messages.js'
import { objectChecksum, type UploadChecksum } from '../multipart-checksum.js'
import type { ChecksumAlgorithm, Checksums, ChecksumType } from '../objects.js'
import { bareEtag } from './conditions.js'

/** A part as stored: what completion checks of it. */
export interface StoredPart {
  etag: string
  size: number
  checksums: Checksums
}

/** What a part upload brings: its own checksums, or one it asks computed (a copied part). */
export interface PartChecksums {
  checksums?: Checksums
  compute?: ChecksumAlgorithm
}

/** A part's checksums against the algorithm its upload was created with (none: any part). */
export function checkPartChecksum(
  algorithm: ChecksumAlgorithm | undefined,
  part: PartChecksums,
): Result<null> {
  if (algorithm === undefined) return ok(null)
  if (part.checksums?.[algorithm] !== undefined || part.compute === algorithm) return ok(null)
  const sent = Object.keys(part.checksums ?? {})[0] ?? 'null'
  return fail(
    'invalid_request',
    `Checksum Type mismatch occurred, expected checksum Type: ${algorithm}, ` +
      `actual checksum Type: ${sent}`,
  )
}

/** The checksum a copied part must have computed: its upload's, unless the source carries it. */
export function checksumToCompute(
  algorithm: ChecksumAlgorithm | undefined,
  carried: Checksums,
): ChecksumAlgorithm | undefined {
  return algorithm === undefined || carried[algorithm] !== undefined ? undefined : algorithm
}

/** The list with each part number once, its last entry; its order checked before any part. */
export function distinctParts(parts: readonly CompletedPart[]): Result<CompletedPart[]> {
  const distinct: CompletedPart[] = []
  for (const part of parts) {
    const previous = distinct[distinct.length - 1]
    if (previous !== undefined && part.partNumber < previous.partNumber) {
      return fail('invalid_part_order', `part ${part.partNumber} after part ${previous.partNumber}`)
    }
    if (previous?.partNumber === part.partNumber) distinct.pop()
    distinct.push(part)
  }
  return ok(distinct)
}

/** Checks the listed parts (distinct, ascending) against the stored ones, `stored[i]` the part
 * numbered as `wanted[i]` or undefined: each exists with its ETag and listed checksums, and only
 * then do sizes count. */
export function checkListedParts(
  wanted: readonly CompletedPart[],
  stored: readonly (StoredPart | undefined)[],
): Result<StoredPart[]> {
  const parts: StoredPart[] = []
  for (const [index, { partNumber, etag, checksums }] of wanted.entries()) {
    const part = stored[index]
    if (part === undefined || !sameEtag(part.etag, etag)) {
      return fail('invalid_part', `part ${partNumber} was not uploaded with that ETag`)
    }
    for (const [algorithm, value] of Object.entries(checksums ?? {})) {
      if (part.checksums[algorithm as ChecksumAlgorithm] !== value) {
        return fail('invalid_part', `part ${partNumber} has another ${algorithm} checksum`)
      }
    }
    parts.push(part)
  }
  for (const [index, part] of parts.slice(0, -1).entries()) {
    if (part.size < PART_BYTES_MIN) {
      const number = wanted[index]?.partNumber
      return fail('entity_too_small', `part ${number} has ${part.size} bytes`)
    }
  }
  return ok(parts)
}

/** ETags compare without their quotes: clients send them either way. */
export function sameEtag(a: string, b: string): boolean {
  return bareEtag(a.trim()) === bareEtag(b.trim())
}

/** The ETag of the object made of these parts (their ETags, in order). */
export function multipartEtag(partEtags: readonly string[]): string {
  const md5s = partEtags.map((etag) => Buffer.from(bareEtag(etag.trim()), 'hex'))
  const digest = createHash('md5').update(Buffer.concat(md5s)).digest('hex')
  return `"${digest}-${partEtags.length}"`
}

/** The object's checksum, from its parts', when the upload named an algorithm (else null). */
export function completedChecksum(
  upload: UploadChecksum | undefined,
  wanted: readonly CompletedPart[],
  parts: readonly StoredPart[],
  expected: Checksums | undefined,
): Result<{ checksums: Checksums; type: ChecksumType } | null> {
  if (upload === undefined) return ok(null)
  const { algorithm, type } = upload
  const sums: { checksum: string; size: number }[] = []
  for (const [index, part] of parts.entries()) {
    const checksum = part.checksums[algorithm]
    if (checksum === undefined) {
      return fail('invalid_part', `part ${wanted[index]?.partNumber} has no ${algorithm} checksum`)
    }
    sums.push({ checksum, size: part.size })
  }
  // The whole object's checksum is made from the stored parts', so a wrong one the client named
  // is BadDigest first, whatever its list says (as Ceph answers).
  const value = objectChecksum(upload, sums)
  const named = expected?.[algorithm]
  if (named !== undefined && named !== value) {
    return fail('checksum_mismatch', `x-amz-checksum-${algorithm} does not match the parts'`)
  }
  const unlisted = wanted.find((part) => part.checksums?.[algorithm] === undefined)
  if (type === 'COMPOSITE' && unlisted !== undefined) {
    return fail(
      'invalid_request',
      `The upload was created using a ${algorithm} checksum. The complete request must ` +
        `include the checksum for each part. It was missing for part ${unlisted.partNumber} in ` +
        'the request.',
    )
  }
  return ok({ checksums: { [algorithm]: value }, type })
}
