/** @module The hashes of an object's body, fed as it passes: MD5 (the ETag) unless the sender of a
 * stream computes it, SHA-256 (the content address), CRC32 (the scrubber's) and every additional
 * checksum named (CRC32 and SHA-256 among them derive from the two above). The store hashes what
 * it receives with it, and a single node's ingress what it writes or sends inline itself. */
import { createHash, type Hash } from 'node:crypto'
import { createChecksum, crc32Update, type Checksum } from './checksums.js'
import type { BodyDigests, ChecksumAlgorithm, Checksums } from './objects.js'

export class BodyHasher {
  private bytes = 0
  private crc32 = 0
  private readonly md5: Hash | null
  private readonly sha256 = createHash('sha256')
  private readonly extra: Checksum[]

  constructor(algorithms: readonly ChecksumAlgorithm[], md5: boolean) {
    this.md5 = md5 ? createHash('md5') : null
    const named = algorithms.filter((name) => name !== 'crc32' && name !== 'sha256')
    this.extra = [...new Set(named)].map(createChecksum)
  }

  get size(): number {
    return this.bytes
  }

  update(chunk: Uint8Array): void {
    this.bytes += chunk.byteLength
    this.md5?.update(chunk)
    this.sha256.update(chunk)
    this.crc32 = crc32Update(this.crc32, chunk)
    for (const checksum of this.extra) checksum.update(chunk)
  }

  /** Once, after the last update. */
  async digests(): Promise<BodyDigests> {
    const checksums: Checksums = {}
    for (const checksum of this.extra) checksums[checksum.algorithm] = await checksum.digestBase64()
    const digests: BodyDigests = {
      size: this.bytes,
      sha256Hex: this.sha256.digest('hex'),
      crc32: this.crc32,
      checksums,
    }
    if (this.md5 !== null) digests.md5Hex = this.md5.digest('hex')
    return digests
  }
}

/** The checksums a body of `expect` is hashed with beyond MD5, SHA-256 and CRC32: those the client
 * named, and the one to compute. */
export function namedChecksums(expect: {
  checksums?: Checksums
  compute?: ChecksumAlgorithm
}): ChecksumAlgorithm[] {
  const named = Object.keys(expect.checksums ?? {}) as ChecksumAlgorithm[]
  return expect.compute === undefined ? named : [...named, expect.compute]
}
