/** @module Checksum unit tests.
 * Goal: the x-amz-checksum-* values we compute are the ones S3 clients compute, whole or in pieces.
 * Method: published check values for '123456789' (CRC-32 0xCBF43926, CRC-32C 0xE3069283,
 * CRC-64/NVME 0xAE8B14860A799888), known digests of 'hello', the @aws-crypto/crc32c package as an
 * independent CRC32C reference on random data, and every split point of a buffer fed
 * incrementally. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { createHash, randomBytes } from 'node:crypto'
import { crc32c as referenceCrc32c } from '@aws-crypto/crc32c'
import {
  CHECKSUM_ALGORITHMS,
  checksumAlgorithmFromHeader,
  checksumBase64,
  checksumHeaderName,
  crc32cUpdate,
  crcToBase64,
  createChecksum,
} from '../../protocol/checksums.js'

const CHECK = Buffer.from('123456789')

function crcOf(base64: string): number {
  return Buffer.from(base64, 'base64').readUInt32BE(0)
}

test('check values of 123456789', async () => {
  assert.is(crcOf(await checksumBase64('crc32', CHECK)), 0xcbf43926)
  assert.is(crcOf(await checksumBase64('crc32c', CHECK)), 0xe3069283)
  assert.is(crc32cUpdate(0, CHECK), 0xe3069283)
  assert.is(await checksumBase64('crc32', CHECK), 'y/Q5Jg==')
  assert.is(await checksumBase64('crc32c', CHECK), '4waSgw==')
  const crc64 = Buffer.from(await checksumBase64('crc64nvme', CHECK), 'base64')
  assert.is(crc64.toString('hex'), 'ae8b14860a799888')
})

test('known digests of hello, as the AWS SDK sends them', async () => {
  const hello = Buffer.from('hello')
  assert.is(await checksumBase64('crc32', hello), 'NhCmhg==') // captured from @aws-sdk/client-s3
  assert.is(await checksumBase64('sha1', hello), 'qvTGHdzF6KLavt4PO0gs2a6pQ00=')
  assert.is(await checksumBase64('sha256', hello), 'LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ=')
  assert.is(await checksumBase64('crc32', Buffer.alloc(0)), 'AAAAAA==')
  assert.is(await checksumBase64('crc32c', Buffer.alloc(0)), 'AAAAAA==')
  assert.is(await checksumBase64('crc64nvme', Buffer.alloc(0)), 'AAAAAAAAAAA=')
})

test('CRC32C agrees with @aws-crypto/crc32c on random data of many lengths', async () => {
  for (let length = 0; length < 80; length++) {
    const data = randomBytes(length)
    assert.is(crc32cUpdate(0, data), referenceCrc32c(data), `length ${length}`)
  }
  const big = randomBytes(1 << 20)
  assert.is(crc32cUpdate(0, big), referenceCrc32c(big))
  // Unaligned views must not read outside their window.
  const view = big.subarray(3, 1003)
  assert.is(crc32cUpdate(0, view), referenceCrc32c(Uint8Array.from(view)))
})

test('incremental equals one-shot at every split point, for every algorithm', async () => {
  const data = randomBytes(67)
  for (const algorithm of CHECKSUM_ALGORITHMS) {
    const whole = await checksumBase64(algorithm, data)
    for (let split = 0; split <= data.length; split++) {
      const checksum = createChecksum(algorithm)
      checksum.update(data.subarray(0, split))
      checksum.update(data.subarray(split))
      assert.is(await checksum.digestBase64(), whole, `${algorithm} split at ${split}`)
    }
    const bytewise = createChecksum(algorithm)
    for (const byte of data) bytewise.update(Uint8Array.of(byte))
    assert.is(await bytewise.digestBase64(), whole, `${algorithm} byte by byte`)
  }
  const sha = createHash('sha256').update(data).digest('base64')
  assert.is(await checksumBase64('sha256', data), sha)
})

test('digest is stable and ends updates', async () => {
  for (const algorithm of CHECKSUM_ALGORITHMS) {
    const checksum = createChecksum(algorithm)
    checksum.update(CHECK)
    const first = await checksum.digestBase64()
    assert.is(await checksum.digestBase64(), first)
    assert.throws(() => checksum.update(CHECK))
  }
})

test('header names map to algorithms and back', async () => {
  assert.is(checksumAlgorithmFromHeader('x-amz-checksum-crc32'), 'crc32')
  assert.is(checksumAlgorithmFromHeader('X-Amz-Checksum-CRC32C'), 'crc32c')
  assert.is(checksumAlgorithmFromHeader('x-amz-checksum-sha1'), 'sha1')
  assert.is(checksumAlgorithmFromHeader('x-amz-checksum-sha256'), 'sha256')
  assert.is(checksumAlgorithmFromHeader('x-amz-checksum-algorithm'), null)
  assert.is(checksumAlgorithmFromHeader('x-amz-checksum-crc64nvme'), 'crc64nvme')
  assert.is(checksumAlgorithmFromHeader('x-amz-checksum-type'), null)
  assert.is(checksumAlgorithmFromHeader('content-md5'), null)
  for (const algorithm of CHECKSUM_ALGORITHMS) {
    assert.is(checksumAlgorithmFromHeader(checksumHeaderName(algorithm)), algorithm)
  }
  assert.is(crcToBase64(0xffffffff), '/////w==')
})

test.run()
