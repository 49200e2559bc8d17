/** @module The S3 front end's calls of a bucket setting (protocol/bucket-settings.ts): the
 * bucket.setting.* messages, typed by the setting's name, so that a handler (cors.ts, tagging.ts)
 * gets and puts values of its own setting only. */
import type {
  BucketSettingName,
  BucketSettingValues,
  NamedBucketSetting,
} from '../../protocol/bucket-settings.js'
import type { Result } from '../../protocol/errors.js'
import { askCoordinator, type S3Exchange } from './exchange.js'

export function getBucketSetting<N extends BucketSettingName>(
  ex: S3Exchange,
  bucket: string,
  name: N,
): Promise<Result<BucketSettingValues[N]>> {
  // The store answers a get with the value stored under this name, which it put as this type.
  return askCoordinator(ex, { kind: 'bucket.setting.get', bucket, name }) as Promise<
    Result<BucketSettingValues[N]>
  >
}

/** A value its setting's rules call empty deletes the setting instead. */
export function putBucketSetting<N extends BucketSettingName>(
  ex: S3Exchange,
  bucket: string,
  name: N,
  value: BucketSettingValues[N],
): Promise<Result<null>> {
  // The name ties the value to its type; the union of all settings does not see it through N.
  const setting = { name, value } as NamedBucketSetting
  return askCoordinator(ex, { kind: 'bucket.setting.put', bucket, ...setting })
}

export function deleteBucketSetting(
  ex: S3Exchange,
  bucket: string,
  name: BucketSettingName,
): Promise<Result<null>> {
  return askCoordinator(ex, { kind: 'bucket.setting.delete', bucket, name })
}
