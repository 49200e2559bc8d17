/** @module CRC combination: the CRC of A followed by B from crc(A), crc(B) and B's length, without
 * the bytes. This is how a multipart upload's FULL_OBJECT checksum comes from its parts' CRCs,
 * as Amazon S3 computes it. The method is zlib's crc32_combine (multiplying crc(A) by x^(8·len(B))
 * modulo the polynomial, in the reflected bit order these CRCs use); it holds for CRC-32, CRC-32C
 * and CRC-64/NVME alike, whose initial value and final XOR are all ones. BigInt keeps one
 * implementation for both widths: a combination costs a few thousand BigInt operations, once per
 * part at completion. */
import assert from 'node:assert/strict'

export interface CrcModel {
  /** Width in bits. */
  width: 32 | 64
  /** The polynomial, bit-reflected. */
  reflected: bigint
}

export const CRC32_MODEL: CrcModel = { width: 32, reflected: 0xedb88320n }
export const CRC32C_MODEL: CrcModel = { width: 32, reflected: 0x82f63b78n }
export const CRC64NVME_MODEL: CrcModel = { width: 64, reflected: 0x9a6c9329ac4bc9b5n }

/** a·b modulo the polynomial, both reflected. */
function multiplyModP(model: CrcModel, a: bigint, b: bigint): bigint {
  const top = 1n << BigInt(model.width - 1)
  let product = 0n
  let m = top
  let multiplier = b
  while (m !== 0n) {
    if ((a & m) !== 0n) product ^= multiplier
    m >>= 1n
    multiplier = (multiplier & 1n) !== 0n ? (multiplier >> 1n) ^ model.reflected : multiplier >> 1n
  }
  return product
}

/** x^(8·bytes) modulo the polynomial, by squaring: x^(2^k) for each bit k of 8·bytes. */
function shiftOperator(model: CrcModel, bytes: number): bigint {
  let operator = 1n << BigInt(model.width - 1) // x^0
  let power = 1n << BigInt(model.width - 2) // x^1
  for (let bits = BigInt(bytes) * 8n; bits > 0n; bits >>= 1n) {
    if ((bits & 1n) !== 0n) operator = multiplyModP(model, power, operator)
    power = multiplyModP(model, power, power)
  }
  return operator
}

/** Combines CRCs of consecutive pieces, each given as its CRC and byte length. Pieces of equal
 * length (every part but the last, usually) share one shift operator. */
export function combineCrcs(model: CrcModel, pieces: { crc: bigint; bytes: number }[]): bigint {
  const operators = new Map<number, bigint>()
  let combined = 0n
  for (const { crc, bytes } of pieces) {
    assert(Number.isSafeInteger(bytes) && bytes >= 0)
    let operator = operators.get(bytes)
    if (operator === undefined) {
      operator = shiftOperator(model, bytes)
      operators.set(bytes, operator)
    }
    combined = multiplyModP(model, operator, combined) ^ crc
  }
  return combined
}
