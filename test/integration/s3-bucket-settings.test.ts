/** Goal: a bucket's settings (CORS rules, tags) belong to that bucket alone: once it is deleted and
 * a bucket of the same name is created, GetBucketCors answers 404 NoSuchCORSConfiguration and
 * GetBucketTagging 404 NoSuchTagSet, as Amazon S3 does, on a node and in a cluster (where each
 * setting and its deletion with the bucket are catalog changes every node applies). Method: the
 * real server (or cluster, TEST_TARGET) through @aws-sdk/client-s3 (test/support/s3-suite.ts). */
import * as assert from 'uvu/assert'
import {
  CreateBucketCommand,
  DeleteBucketCommand,
  GetBucketCorsCommand,
  GetBucketTaggingCommand,
  PutBucketCorsCommand,
  PutBucketTaggingCommand,
} from '@aws-sdk/client-s3'
import { failure } from '../support/s3-failure.js'
import { s3, test, useS3Suite } from '../support/s3-suite.js'

/** The case that also runs through a gateway (test/support/s3-suite.ts). */
useS3Suite(undefined, ['settings are gone once their bucket is deleted and created again'])

const BUCKET = 'settings-reborn'
const RULES = [{ AllowedOrigins: ['https://example.com'], AllowedMethods: ['GET'] }]
const TAGS = [{ Key: 'team', Value: 'storage' }]

test('settings are gone once their bucket is deleted and created again', async () => {
  await s3.send(new CreateBucketCommand({ Bucket: BUCKET }))
  await s3.send(
    new PutBucketCorsCommand({ Bucket: BUCKET, CORSConfiguration: { CORSRules: RULES } }),
  )
  await s3.send(new PutBucketTaggingCommand({ Bucket: BUCKET, Tagging: { TagSet: TAGS } }))
  const cors = await s3.send(new GetBucketCorsCommand({ Bucket: BUCKET }))
  assert.equal(cors.CORSRules?.[0]?.AllowedOrigins, RULES[0]?.AllowedOrigins)
  const tags = await s3.send(new GetBucketTaggingCommand({ Bucket: BUCKET }))
  assert.equal(tags.TagSet, TAGS)

  await s3.send(new DeleteBucketCommand({ Bucket: BUCKET }))
  await s3.send(new CreateBucketCommand({ Bucket: BUCKET }))
  const noRules = await failure(() => s3.send(new GetBucketCorsCommand({ Bucket: BUCKET })))
  assert.equal(noRules, { name: 'NoSuchCORSConfiguration', status: 404 })
  const noTags = await failure(() => s3.send(new GetBucketTaggingCommand({ Bucket: BUCKET })))
  assert.equal(noTags, { name: 'NoSuchTagSet', status: 404 })
})

test.run()
