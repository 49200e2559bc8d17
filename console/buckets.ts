/** @module The Buckets page: every bucket the user may list, with its creation date and, for a
 * SuperUser (the admin API's bucket stats), its size and object count; create a bucket and
 * delete one (after a confirmation). Each name opens its objects, where its settings are. Through
 * the S3 API (ListBuckets, CreateBucket, DeleteBucket) with the user's rights. */
import {
  api,
  attempt,
  canWrite,
  childrenNamed,
  dataTable,
  el,
  formatBytes,
  formatTime,
  notify,
  pageData,
  parseXml,
  render,
  s3,
  s3Path,
  textOf,
} from './common.js'

interface BucketStats {
  name: string
  objects_count: number
  storage_used_bytes: number
}

interface Bucket {
  name: string
  created: string
}

const data = pageData()

async function listBuckets(): Promise<Bucket[]> {
  const response = await s3('/console/s3/')
  const doc = parseXml(await response.text())
  const list = childrenNamed(doc.documentElement, 'Buckets')[0]
  if (list === undefined) return []
  return childrenNamed(list, 'Bucket').map((bucket) => ({
    name: textOf(bucket, 'Name'),
    created: textOf(bucket, 'CreationDate'),
  }))
}

/** Sizes and counts: the admin API's, which only a SuperUser may read. */
async function bucketStats(): Promise<Map<string, BucketStats>> {
  if (data.role !== 'SuperUser') return new Map()
  try {
    const stats = await api<BucketStats[]>('/console/api/admin/bucket-stats')
    return new Map(stats.map((entry) => [entry.name, entry]))
  } catch {
    return new Map()
  }
}

async function load(): Promise<void> {
  const [buckets, stats] = await Promise.all([listBuckets(), bucketStats()])
  buckets.sort((a, b) => a.name.localeCompare(b.name))
  const writer = canWrite(data)
  render(
    writer ? createForm() : null,
    openForm(),
    dataTable(
      `${buckets.length} buckets`,
      ['Bucket', 'Created', 'Objects', 'Size', ...(writer ? ['Actions'] : [])],
      buckets.map((bucket) => bucketRow(bucket, stats.get(bucket.name), writer)),
      ['Objects', 'Size'],
    ),
  )
}

function bucketRow(bucket: Bucket, stats: BucketStats | undefined, writer: boolean): HTMLElement {
  return el(
    'tr',
    { 'data-bucket': bucket.name },
    el(
      'th',
      { scope: 'row' },
      el('a', { href: `/console/buckets/${encodeURIComponent(bucket.name)}` }, bucket.name),
    ),
    el('td', {}, formatTime(bucket.created)),
    el('td', { class: 'num' }, stats === undefined ? '—' : stats.objects_count),
    el('td', { class: 'num' }, stats === undefined ? '—' : formatBytes(stats.storage_used_bytes)),
    writer
      ? el(
          'td',
          {},
          el(
            'button',
            {
              type: 'button',
              class: 'danger',
              'aria-label': `Delete bucket ${bucket.name}`,
              onclick: () => void remove(bucket.name),
            },
            'Delete',
          ),
        )
      : null,
  )
}

function createForm(): HTMLElement {
  const name = el('input', {
    id: 'bucket-name',
    name: 'bucket',
    required: true,
    minlength: 3,
    maxlength: 63,
    pattern: '[a-z0-9][a-z0-9.\\-]{1,61}[a-z0-9]',
    title: '3 to 63 lower-case letters, digits, dots and hyphens',
    autocomplete: 'off',
  })
  const form = el(
    'form',
    { class: 'inline', 'aria-label': 'Create a bucket' },
    el('div', {}, el('label', { for: 'bucket-name' }, 'Bucket name'), name),
    el('button', { type: 'submit' }, 'Create bucket'),
  )
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    void attempt(async () => {
      const bucket = name.value.trim()
      await s3(s3Path(bucket), { method: 'PUT' })
      await load()
      notify(`Bucket ${bucket} created.`)
    })
  })
  return form
}

/** S3 lists only the buckets a user owns (a SuperUser, all): another's bucket is opened by its
 * name, and the S3 API decides what the user may do in it. */
function openForm(): HTMLElement {
  const name = el('input', {
    id: 'open-bucket',
    name: 'bucket',
    required: true,
    autocomplete: 'off',
  })
  const form = el(
    'form',
    { class: 'inline', 'aria-label': 'Open a bucket' },
    el('div', {}, el('label', { for: 'open-bucket' }, 'Open bucket by name'), name),
    el('button', { type: 'submit', class: 'secondary' }, 'Open'),
  )
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    window.location.assign(`/console/buckets/${encodeURIComponent(name.value.trim())}`)
  })
  return form
}

function remove(bucket: string): Promise<void> {
  if (!window.confirm(`Delete the bucket ${bucket}? It must be empty.`)) return Promise.resolve()
  return attempt(async () => {
    await s3(s3Path(bucket), { method: 'DELETE' })
    await load()
    notify(`Bucket ${bucket} deleted.`)
  })
}

void attempt(load)
