/** @module The S3 operation a request names, for metrics labels and logs: decided from the method,
 * bucket/key and subresource alone, so even a request refused before dispatch (bad signature,
 * denied role) is counted under the operation it attempted. Mirrors the router's dispatch. */

export type S3Operation =
  | 'ListBuckets'
  | 'CreateBucket'
  | 'HeadBucket'
  | 'DeleteBucket'
  | 'GetBucketLocation'
  | 'PutBucketCors'
  | 'GetBucketCors'
  | 'DeleteBucketCors'
  | 'CorsPreflight'
  | 'ListObjectsV2'
  | 'ListObjects'
  | 'DeleteObjects'
  | 'PostObject'
  | 'PutObject'
  | 'CopyObject'
  | 'GetObject'
  | 'GetObjectAttributes'
  | 'HeadObject'
  | 'DeleteObject'
  | 'CreateMultipartUpload'
  | 'UploadPart'
  | 'UploadPartCopy'
  | 'CompleteMultipartUpload'
  | 'AbortMultipartUpload'
  | 'ListParts'
  | 'ListMultipartUploads'
  | 'PutBucketVersioning'
  | 'GetBucketVersioning'
  | 'ListObjectVersions'
  | 'PutObjectTagging'
  | 'GetObjectTagging'
  | 'DeleteObjectTagging'
  | 'PutBucketTagging'
  | 'GetBucketTagging'
  | 'DeleteBucketTagging'
  | 'PutBucketPolicy'
  | 'GetBucketPolicy'
  | 'DeleteBucketPolicy'
  | 'GetBucketPolicyStatus'
  | 'PutBucketAcl'
  | 'GetBucketAcl'
  | 'PutObjectAcl'
  | 'GetObjectAcl'
  | 'PutObjectLockConfiguration'
  | 'GetObjectLockConfiguration'
  | 'PutObjectRetention'
  | 'GetObjectRetention'
  | 'PutObjectLegalHold'
  | 'GetObjectLegalHold'
  | 'PutBucketLifecycleConfiguration'
  | 'GetBucketLifecycleConfiguration'
  | 'DeleteBucketLifecycle'
  | 'NotImplemented'
  | 'Unknown'

export function operationOf(
  method: string,
  target: { bucket: string | null; key: string | null },
  query: URLSearchParams,
  headers: Record<string, string>,
  unimplemented: readonly string[],
): S3Operation {
  if (method === 'OPTIONS') return 'CorsPreflight'
  if (unimplemented.some((name) => query.has(name))) return 'NotImplemented'
  if (target.bucket === null) return method === 'GET' ? 'ListBuckets' : 'Unknown'
  if (target.key === null) return bucketOperationOf(method, query, headers)
  if (query.has('tagging')) return taggingOperationOf(method, 'Object')
  if (query.has('acl')) return aclOperationOf(method, 'Object')
  if (query.has('retention')) return lockOperationOf(method, 'ObjectRetention')
  if (query.has('legal-hold')) return lockOperationOf(method, 'ObjectLegalHold')
  if (query.has('uploadId')) return uploadOperationOf(method, headers)
  switch (method) {
    case 'GET':
      return query.has('attributes') ? 'GetObjectAttributes' : 'GetObject'
    case 'HEAD':
      return 'HeadObject'
    case 'PUT':
      return headers['x-amz-copy-source'] === undefined ? 'PutObject' : 'CopyObject'
    case 'DELETE':
      return 'DeleteObject'
    case 'POST':
      return query.has('uploads') ? 'CreateMultipartUpload' : 'Unknown'
    default:
      return 'Unknown'
  }
}

function uploadOperationOf(method: string, headers: Record<string, string>): S3Operation {
  switch (method) {
    case 'GET':
      return 'ListParts'
    case 'PUT':
      return headers['x-amz-copy-source'] === undefined ? 'UploadPart' : 'UploadPartCopy'
    case 'POST':
      return 'CompleteMultipartUpload'
    case 'DELETE':
      return 'AbortMultipartUpload'
    default:
      return 'Unknown'
  }
}

function bucketOperationOf(
  method: string,
  query: URLSearchParams,
  headers: Record<string, string>,
): S3Operation {
  if (query.has('cors')) return corsOperationOf(method)
  if (query.has('tagging')) return taggingOperationOf(method, 'Bucket')
  if (query.has('policy')) return policyOperationOf(method)
  if (query.has('policyStatus')) return method === 'GET' ? 'GetBucketPolicyStatus' : 'Unknown'
  if (query.has('acl')) return aclOperationOf(method, 'Bucket')
  if (query.has('object-lock')) return lockOperationOf(method, 'ObjectLockConfiguration')
  if (query.has('lifecycle')) return lifecycleOperationOf(method)
  switch (method) {
    case 'GET':
      if (query.has('location')) return 'GetBucketLocation'
      if (query.has('uploads')) return 'ListMultipartUploads'
      if (query.has('versioning')) return 'GetBucketVersioning'
      if (query.has('versions')) return 'ListObjectVersions'
      return query.get('list-type') === '2' ? 'ListObjectsV2' : 'ListObjects'
    case 'HEAD':
      return 'HeadBucket'
    case 'PUT':
      return query.has('versioning') ? 'PutBucketVersioning' : 'CreateBucket'
    case 'DELETE':
      return 'DeleteBucket'
    case 'POST':
      if (query.has('delete')) return 'DeleteObjects'
      return headers['content-type']?.toLowerCase().startsWith('multipart/form-data') === true
        ? 'PostObject'
        : 'Unknown'
    default:
      return 'Unknown'
  }
}

function corsOperationOf(method: string): S3Operation {
  if (method === 'GET') return 'GetBucketCors'
  if (method === 'PUT') return 'PutBucketCors'
  return method === 'DELETE' ? 'DeleteBucketCors' : 'Unknown'
}

function taggingOperationOf(method: string, of: 'Object' | 'Bucket'): S3Operation {
  if (method === 'GET') return `Get${of}Tagging`
  if (method === 'PUT') return `Put${of}Tagging`
  return method === 'DELETE' ? `Delete${of}Tagging` : 'Unknown'
}

function policyOperationOf(method: string): S3Operation {
  if (method === 'GET') return 'GetBucketPolicy'
  if (method === 'PUT') return 'PutBucketPolicy'
  return method === 'DELETE' ? 'DeleteBucketPolicy' : 'Unknown'
}

function aclOperationOf(method: string, of: 'Object' | 'Bucket'): S3Operation {
  if (method === 'GET') return `Get${of}Acl`
  return method === 'PUT' ? `Put${of}Acl` : 'Unknown'
}

function lockOperationOf(
  method: string,
  of: 'ObjectRetention' | 'ObjectLegalHold' | 'ObjectLockConfiguration',
): S3Operation {
  if (method === 'GET') return `Get${of}`
  return method === 'PUT' ? `Put${of}` : 'Unknown'
}

function lifecycleOperationOf(method: string): S3Operation {
  if (method === 'GET') return 'GetBucketLifecycleConfiguration'
  if (method === 'PUT') return 'PutBucketLifecycleConfiguration'
  return method === 'DELETE' ? 'DeleteBucketLifecycle' : 'Unknown'
}
