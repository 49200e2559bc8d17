/** @module Scrubbing contracts (CLUSTER.md section 8): what the scrubber asks its store, and what
 * the scrubber itself answers. The store stays the only owner of blob files: the scrubber walks
 * the blob records in pages (`blob.list`), reads each blob whole (`blob.read`, the bytes on a
 * stream as a GET's) and checks its CRC32 on its own thread; it has the store mark a copy it found
 * corrupt (`blob.mark`) and, in cluster mode, replace it with a good copy read from another node
 * (`blob.replace`, the same `blob.read` served to a peer through Replica.Read). A store that meets
 * a corrupt blob while serving a GET tells its scrubber (`scrubber.check`), which checks it now. */
import type { z } from 'zod'
import type { Request, StreamHandle } from './actor.js'
import type { Fields } from './wire/fields.js'
import type { blobHead } from './wire/replica-answers.js'
import type { blobRead } from './wire/replica.js'

/** A blob as the store's records describe it. */
export interface BlobEntry {
  sha256: string
  size: number
  crc32: number
  /** The scrubber found this copy corrupt and no good one replaced it yet. */
  corrupt?: true
}

export interface BlobPage {
  /** Blobs after the page's `after`, in sha256 order. */
  blobs: BlobEntry[]
  /** Logical bytes the store holds (every reference counted): what a scan's pace derives from. */
  storedBytes: number
  /** Requests the store is handling and GET streams it is sending now: how busy it is. */
  load: number
}

/** The answer to `blob.read`: the blob's record, and its bytes when it is inline (a file's come on
 * the stream once asked; to a peer, inline bytes come on the stream too). */
export type BlobHead = z.infer<typeof blobHead> & {
  /** The blob's bytes when it is inline, with a local answer (to a peer, on the stream). */
  body?: Uint8Array
}

/** Requests of the scrubber to its store (and `blob.read` of a peer's scrubber, Replica.Read). */
export type BlobMsg =
  /** Blob records after `after` (null: from the first), at most `limit`. */
  | (Request & { kind: 'blob.list'; after: string | null; limit: number })
  /** One blob whole: inline bytes in the answer, a file's on `stream` once asked. `unchecked`: the
   * bytes go as they are, even of a copy known corrupt (the scrubber checks them itself);
   * otherwise the store refuses a copy it knows corrupt and checks the CRC32 as it sends. */
  | (Request & Fields<typeof blobRead> & { stream?: StreamHandle; unchecked?: true })
  /** Replaces the local copy of a blob with the bytes on `stream`, once they are verified against
   * its SHA-256, CRC32 and size; answers whether it replaced it (not when the blob is gone, or its
   * copy changed meanwhile). */
  | (Request & { kind: 'blob.replace'; sha256: string; stream: StreamHandle })
  /** The scrubber's verdict on a copy: corrupt (GETs answer `corrupt` before any byte) or not. */
  | (Request & { kind: 'blob.mark'; sha256: string; corrupt: boolean })
  /** A reader of the store's process found the copy's bytes damaged (a GET of a lent file whose
   * CRC32 failed, or whose file was gone): recorded as the store's own reads record it. */
  | (Request & { kind: 'blob.damaged'; sha256: string; why: string })

export type BlobReply = {
  'blob.list': BlobPage
  'blob.read': BlobHead
  'blob.replace': { replaced: boolean }
  'blob.mark': null
  'blob.damaged': null
}

/** What the scrubber counted since it started, and where its pass is (repair-status, /metrics). */
export interface ScrubberStatus {
  blobs_scanned: number
  corruptions_found: number
  corruptions_healed: number
  /** 0..1 of the current pass (1 between passes). */
  full_scan_progress: number
}

export type ScrubberMsg =
  /** The store met a blob whose bytes fail their CRC32 (a GET): check it now, and heal it. */
  (Request & { kind: 'scrubber.check'; sha256: string }) | (Request & { kind: 'scrubber.status' })

export type ScrubberReply = {
  'scrubber.check': null
  'scrubber.status': ScrubberStatus
}

/** The name of the scrubber's record in the store (`system.local-*`): where its pass is. */
export const SCRUBBER_RECORD = 'scrubber.cursor'
