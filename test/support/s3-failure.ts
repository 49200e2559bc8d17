/** @module What an S3 call that is expected to fail failed with: the SDK's error name (S3's error
 * code) and the HTTP status, or `no error` when it succeeded. */
export async function failure(
  run: () => Promise<unknown>,
): Promise<{ name: string; status?: number }> {
  try {
    await run()
  } catch (error) {
    const failed = error as { name: string; $metadata?: { httpStatusCode?: number } }
    const status = failed.$metadata?.httpStatusCode
    return status === undefined ? { name: failed.name } : { name: failed.name, status }
  }
  return { name: 'no error' }
}
