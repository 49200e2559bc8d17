/** @module The order S3 lists keys in: their UTF-8 bytes, which differs from JavaScript's string
 * order (UTF-16 code units) for characters above U+FFFF against those from U+E000. */
export function compareUtf8(left: string, right: string): number {
  return Buffer.compare(Buffer.from(left, 'utf8'), Buffer.from(right, 'utf8'))
}
