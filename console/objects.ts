/** @module A bucket's page: its objects, with prefixes as folders (a breadcrumb; the prefix in the
 * URL, so back, forward and reload keep the place), paging by continuation tokens, uploads (a file
 * input or drag and drop, a progress bar each, multipart above MULTIPART_FROM_BYTES), downloads,
 * deletes, an object's details (metadata, tags, versions, a share link), and the bucket's settings
 * (versioning, CORS rules, lifecycle rules, object lock, policy, ACL, quota) as forms, and an
 * object's retention, legal hold and ACL. Everything through the S3 API with the
 * user's rights; a Reader gets no controls that change, and the API refuses what it would. */
import { accessForms, objectAclForm } from './bucket-access.js'
import { lifecycleForm } from './bucket-lifecycle.js'
import { defaultRetentionForm, objectLockForm, readLockConfiguration } from './object-lock.js'
import { quotaForm } from './bucket-quota.js'
import { uploadFile } from './upload.js'
import {
  api,
  attempt,
  canWrite,
  childrenNamed,
  dataTable,
  el,
  errorText,
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

const PAGE_KEYS = 100
const SHARE_LIFETIMES: readonly [string, number][] = [
  ['1 hour', 3_600],
  ['1 day', 86_400],
  ['7 days', 604_800],
]

const data = pageData()
const bucket = data.bucket
const writer = canWrite(data)
/** Who may change a bucket's policy and ACL (a policy may let others; S3 then says). */
const superUser = data.role === 'SuperUser'

interface Listing {
  folders: string[]
  objects: { key: string; size: number; modified: string; etag: string }[]
  next: string | null
}

/** The page's place: its prefix (from the URL) and the tokens of the pages before this one. */
const place = {
  prefix: new URLSearchParams(window.location.search).get('prefix') ?? '',
  tokens: [] as string[],
  token: null as string | null,
}

async function list(): Promise<Listing> {
  const query: Record<string, string> = {
    'list-type': '2',
    delimiter: '/',
    prefix: place.prefix,
    'max-keys': String(PAGE_KEYS),
  }
  if (place.token !== null) query['continuation-token'] = place.token
  const doc = parseXml(await (await s3(s3Path(bucket), { query })).text())
  const root = doc.documentElement
  return {
    folders: childrenNamed(root, 'CommonPrefixes').map((entry) => textOf(entry, 'Prefix')),
    objects: childrenNamed(root, 'Contents').map((entry) => ({
      key: textOf(entry, 'Key'),
      size: Number(textOf(entry, 'Size')),
      modified: textOf(entry, 'LastModified'),
      etag: textOf(entry, 'ETag'),
    })),
    next: textOf(root, 'IsTruncated') === 'true' ? textOf(root, 'NextContinuationToken') : null,
  }
}

function folderHref(prefix: string): string {
  const path = `/console/buckets/${encodeURIComponent(bucket)}`
  return prefix === '' ? path : `${path}?prefix=${encodeURIComponent(prefix)}`
}

function breadcrumb(): HTMLElement {
  const parts = place.prefix.split('/').filter((part) => part !== '')
  const crumbs: HTMLElement[] = [el('a', { href: '/console/buckets' }, 'Buckets')]
  crumbs.push(el('span', { 'aria-hidden': 'true' }, '/'), el('a', { href: folderHref('') }, bucket))
  parts.forEach((part, index) => {
    const prefix = parts.slice(0, index + 1).join('/') + '/'
    crumbs.push(el('span', { 'aria-hidden': 'true' }, '/'))
    const last = index === parts.length - 1
    crumbs.push(el('a', { href: folderHref(prefix), 'aria-current': last ? 'page' : null }, part))
  })
  return el('nav', { class: 'breadcrumb', 'aria-label': 'Breadcrumb' }, crumbs)
}

function nameOf(key: string): string {
  return key.slice(place.prefix.length)
}

function objectRow(object: Listing['objects'][number]): HTMLElement {
  const name = nameOf(object.key)
  return el(
    'tr',
    { 'data-key': object.key },
    el(
      'th',
      { scope: 'row' },
      el(
        'button',
        {
          type: 'button',
          class: 'link',
          'aria-label': `Details of ${name}`,
          onclick: () => void showDetails(object.key),
        },
        name,
      ),
    ),
    el('td', { class: 'num' }, formatBytes(object.size)),
    el('td', {}, formatTime(object.modified)),
    el(
      'td',
      {},
      el(
        'div',
        { class: 'actions' },
        el(
          'a',
          {
            class: 'button secondary',
            href: s3Path(bucket, object.key),
            download: name.split('/').pop() ?? name,
            'aria-label': `Download ${name}`,
          },
          'Download',
        ),
        writer
          ? el(
              'button',
              {
                type: 'button',
                class: 'danger',
                'aria-label': `Delete ${name}`,
                onclick: () => void removeObject(object.key),
              },
              'Delete',
            )
          : null,
      ),
    ),
  )
}

function folderRow(prefix: string): HTMLElement {
  return el(
    'tr',
    { 'data-folder': prefix },
    el('th', { scope: 'row' }, el('a', { href: folderHref(prefix) }, nameOf(prefix))),
    el('td', { class: 'num' }, '—'),
    el('td', {}, 'folder'),
    el('td', {}),
  )
}

function pager(listing: Listing): HTMLElement {
  return el(
    'div',
    { class: 'actions pager' },
    el(
      'button',
      {
        type: 'button',
        class: 'secondary',
        disabled: place.tokens.length === 0,
        onclick: () => {
          place.token = place.tokens.pop() ?? null
          void attempt(load)
        },
      },
      'Previous page',
    ),
    el(
      'button',
      {
        type: 'button',
        class: 'secondary',
        disabled: listing.next === null,
        onclick: () => {
          if (listing.next === null) return
          place.tokens.push(place.token ?? '')
          place.token = listing.next
          void attempt(load)
        },
      },
      'Next page',
    ),
  )
}

/** The previous page's token is '' for the first page. */
function normalizeToken(): void {
  if (place.token === '') place.token = null
}

async function load(): Promise<void> {
  normalizeToken()
  const listing = await list()
  const details = document.getElementById('details')
  const settings = document.getElementById('settings')
  render(
    breadcrumb(),
    writer ? uploadArea() : null,
    el('ul', { class: 'uploads', id: 'uploads', 'aria-label': 'Uploads' }),
    dataTable(
      `${listing.folders.length} folders, ${listing.objects.length} objects on this page`,
      ['Name', 'Size', 'Last modified', 'Actions'],
      [...listing.folders.map(folderRow), ...listing.objects.map(objectRow)],
      ['Size'],
    ),
    pager(listing),
    details ?? el('section', { id: 'details', 'aria-live': 'polite' }),
    settings ?? el('section', { id: 'settings' }),
  )
}

function uploadArea(): HTMLElement {
  const input = el('input', { id: 'upload-files', type: 'file', multiple: true })
  input.addEventListener('change', () => {
    void uploadAll(Array.from(input.files ?? []))
    input.value = ''
  })
  const zone = el(
    'div',
    { class: 'dropzone', id: 'dropzone' },
    el('label', { for: 'upload-files' }, 'Upload files'),
    ' ',
    input,
    el('p', { class: 'muted' }, `Or drop files here: they go under ${bucket}/${place.prefix}`),
  )
  zone.addEventListener('dragover', (event) => {
    event.preventDefault()
    zone.classList.add('over')
  })
  zone.addEventListener('dragleave', () => zone.classList.remove('over'))
  zone.addEventListener('drop', (event) => {
    event.preventDefault()
    zone.classList.remove('over')
    void uploadAll(Array.from(event.dataTransfer?.files ?? []))
  })
  return zone
}

async function uploadAll(files: File[]): Promise<void> {
  const list = document.getElementById('uploads')
  let failed = 0
  for (const file of files) {
    const key = place.prefix + file.name
    const bar = el('progress', {
      max: file.size || 1,
      value: 0,
      'aria-label': `Upload of ${file.name}`,
    })
    const item = el('li', { 'data-upload': key }, el('span', {}, file.name), bar)
    list?.append(item)
    try {
      await uploadFile(bucket, key, file, (sent) => {
        bar.value = sent
      })
      bar.value = file.size || 1
      item.classList.add('done')
    } catch (error) {
      failed += 1
      item.append(el('span', { class: 'error' }, errorText(error)))
    }
  }
  if (failed === 0) {
    await load()
    notify(`${files.length} ${files.length === 1 ? 'file' : 'files'} uploaded.`)
  } else {
    notify(`${failed} of ${files.length} uploads failed.`, 'error')
  }
}

function removeObject(key: string): Promise<void> {
  if (!window.confirm(`Delete ${key}?`)) return Promise.resolve()
  return attempt(async () => {
    await s3(s3Path(bucket, key), { method: 'DELETE' })
    document.getElementById('details')?.replaceChildren()
    await load()
    notify(`${key} deleted.`)
  })
}

// --- An object's details -------------------------------------------------------------------

async function showDetails(key: string): Promise<void> {
  const section = document.getElementById('details')
  if (section === null) return
  try {
    const [head, tags, versions, lock] = await Promise.all([
      s3(s3Path(bucket, key), { method: 'HEAD' }),
      readTags(key),
      readVersions(key),
      readLockConfiguration(bucket),
    ])
    const refresh = (): Promise<void> => showDetails(key)
    const acl = await objectAclForm(bucket, key, null, superUser, refresh)
    section.replaceChildren(
      el('h2', { tabindex: '-1', id: 'details-heading' }, key),
      metadataList(head),
      tagsForm(key, tags),
      ...(lock === null ? [] : [objectLockForm(bucket, key, head, writer, refresh)]),
      acl,
      versionsTable(key, versions),
      shareForm(key),
    )
    document.getElementById('details-heading')?.focus()
  } catch (error) {
    notify(errorText(error), 'error')
  }
}

function metadataList(head: Response): HTMLElement {
  const rows: [string, string][] = [
    ['Size', formatBytes(Number(head.headers.get('content-length') ?? 0))],
    ['Type', head.headers.get('content-type') ?? ''],
    ['ETag', head.headers.get('etag') ?? ''],
    ['Last modified', formatTime(head.headers.get('last-modified') ?? '')],
  ]
  const version = head.headers.get('x-amz-version-id')
  if (version !== null) rows.push(['Version', version])
  head.headers.forEach((value, name) => {
    if (name.startsWith('x-amz-meta-')) rows.push([name.slice('x-amz-meta-'.length), value])
  })
  return el(
    'dl',
    { class: 'meta', 'aria-label': 'Metadata' },
    rows.flatMap(([name, value]) => [el('dt', {}, name), el('dd', {}, value)]),
  )
}

async function readTags(key: string): Promise<[string, string][]> {
  const response = await s3(s3Path(bucket, key), { query: { tagging: '' } })
  const doc = parseXml(await response.text())
  const set = childrenNamed(doc.documentElement, 'TagSet')[0]
  if (set === undefined) return []
  return childrenNamed(set, 'Tag').map((tag) => [textOf(tag, 'Key'), textOf(tag, 'Value')])
}

function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (char) => `&#${char.charCodeAt(0)};`)
}

function tagsForm(key: string, tags: [string, string][]): HTMLElement {
  const area = el('textarea', {
    id: 'tags',
    rows: 3,
    readonly: !writer,
    'aria-describedby': 'tags-help',
  })
  area.value = tags.map(([name, value]) => `${name}=${value}`).join('\n')
  const form = el(
    'form',
    { 'aria-label': 'Object tags' },
    el('h3', {}, 'Tags'),
    el('label', { for: 'tags' }, 'Tags, one name=value a line'),
    area,
    el('p', { class: 'muted', id: 'tags-help' }, 'At most 10 tags.'),
    writer ? el('button', { type: 'submit' }, 'Save tags') : null,
  )
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    void attempt(async () => {
      const pairs = area.value
        .split('\n')
        .map((line) => line.trim())
        .filter((line) => line !== '')
        .map((line) => {
          const at = line.indexOf('=')
          return at === -1 ? [line, ''] : [line.slice(0, at).trim(), line.slice(at + 1).trim()]
        })
      const body =
        '<Tagging><TagSet>' +
        pairs
          .map(
            ([name, value]) =>
              `<Tag><Key>${escapeXml(name ?? '')}</Key>` +
              `<Value>${escapeXml(value ?? '')}</Value></Tag>`,
          )
          .join('') +
        '</TagSet></Tagging>'
      await s3(s3Path(bucket, key), { method: 'PUT', query: { tagging: '' }, body })
      notify(`Tags of ${key} saved.`)
    })
  })
  return form
}

interface Version {
  id: string
  latest: boolean
  marker: boolean
  size: number
  modified: string
}

async function readVersions(key: string): Promise<Version[]> {
  const response = await s3(s3Path(bucket), { query: { versions: '', prefix: key } })
  const root = parseXml(await response.text()).documentElement
  const entries = Array.from(root.children).filter(
    (child) =>
      (child.localName === 'Version' || child.localName === 'DeleteMarker') &&
      textOf(child, 'Key') === key,
  )
  return entries.map((entry) => ({
    id: textOf(entry, 'VersionId'),
    latest: textOf(entry, 'IsLatest') === 'true',
    marker: entry.localName === 'DeleteMarker',
    size: Number(textOf(entry, 'Size') || 0),
    modified: textOf(entry, 'LastModified'),
  }))
}

function versionsTable(key: string, versions: Version[]): HTMLElement {
  return el(
    'section',
    { 'aria-label': 'Versions' },
    el('h3', {}, 'Versions'),
    dataTable(
      null,
      ['Version', 'Latest', 'Size', 'Last modified', ''],
      versions.map((version) =>
        el(
          'tr',
          { 'data-version': version.id },
          el('td', {}, el('code', {}, version.id), version.marker ? ' (delete marker)' : ''),
          el('td', {}, version.latest ? 'yes' : ''),
          el('td', { class: 'num' }, version.marker ? '—' : formatBytes(version.size)),
          el('td', {}, formatTime(version.modified)),
          el(
            'td',
            {},
            version.marker || version.id === 'null'
              ? null
              : el(
                  'a',
                  {
                    href: `${s3Path(bucket, key)}?versionId=${encodeURIComponent(version.id)}`,
                    download: key.split('/').pop() ?? key,
                  },
                  'Download',
                ),
          ),
        ),
      ),
      ['Size'],
    ),
  )
}

function shareForm(key: string): HTMLElement {
  const lifetime = el(
    'select',
    { id: 'share-lifetime' },
    SHARE_LIFETIMES.map(([label, seconds]) => el('option', { value: seconds }, label)),
  )
  const output = el('input', {
    id: 'share-url',
    readonly: true,
    'aria-label': 'Share link',
    class: 'share-url',
  })
  const copy = el('button', { type: 'button', class: 'secondary', disabled: true }, 'Copy link')
  copy.addEventListener('click', () => {
    void navigator.clipboard.writeText(output.value).then(
      () => notify('Link copied.'),
      () => {
        output.select()
        notify('Select the link and copy it.')
      },
    )
  })
  const form = el(
    'form',
    { class: 'inline', 'aria-label': 'Share this object' },
    el('h3', {}, 'Share'),
    el('div', {}, el('label', { for: 'share-lifetime' }, 'Link lifetime'), lifetime),
    el('button', { type: 'submit' }, 'Create link'),
    output,
    copy,
  )
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    void attempt(async () => {
      const body = { bucket, key, expires_seconds: Number(lifetime.value) }
      const link = await api<{ url: string; expires_at: string }>('/console/api/share', {
        method: 'POST',
        body,
      })
      output.value = link.url
      copy.disabled = false
      notify(`The link works until ${formatTime(link.expires_at)}.`)
    })
  })
  return form
}

// --- The bucket's settings -------------------------------------------------------------------

async function showSettings(): Promise<void> {
  const section = document.getElementById('settings')
  if (section === null) return
  const versioning = parseXml(
    await (await s3(s3Path(bucket), { query: { versioning: '' } })).text(),
  )
  const status = textOf(versioning.documentElement, 'Status') || 'Off'
  const rules = await readCors()
  const access = await accessForms(bucket, superUser, showSettings)
  const quota = await quotaForm(bucket, superUser, showSettings)
  const lifecycle = await lifecycleForm(bucket, writer, showSettings)
  const lock = await readLockConfiguration(bucket)
  section.replaceChildren(
    el('h2', {}, 'Settings'),
    versioningForm(status),
    corsForm(rules),
    lifecycle,
    ...(lock === null ? [] : [defaultRetentionForm(bucket, lock, writer, showSettings)]),
    ...access,
    ...(quota === null ? [] : [quota]),
  )
}

function versioningForm(status: string): HTMLElement {
  const select = el(
    'select',
    { id: 'versioning', disabled: !writer },
    (status === 'Off' ? ['Off', 'Enabled'] : ['Enabled', 'Suspended']).map((value) =>
      el('option', { value, selected: value === status }, value),
    ),
  )
  const form = el(
    'form',
    { class: 'inline', 'aria-label': 'Bucket versioning' },
    el('div', {}, el('label', { for: 'versioning' }, 'Versioning'), select),
    writer ? el('button', { type: 'submit' }, 'Save versioning') : null,
  )
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    if (select.value === 'Off') return
    void attempt(async () => {
      const status = `<Status>${select.value}</Status>`
      const body = `<VersioningConfiguration>${status}</VersioningConfiguration>`
      await s3(s3Path(bucket), { method: 'PUT', query: { versioning: '' }, body })
      await showSettings()
      notify(`Versioning is ${select.value}.`)
    })
  })
  return form
}

interface CorsRule {
  origins: string
  methods: string
  headers: string
  expose: string
  maxAge: string
}

async function readCors(): Promise<CorsRule[]> {
  try {
    const doc = parseXml(await (await s3(s3Path(bucket), { query: { cors: '' } })).text())
    const all = (rule: Element, name: string): string =>
      childrenNamed(rule, name)
        .map((child) => child.textContent ?? '')
        .join(', ')
    return childrenNamed(doc.documentElement, 'CORSRule').map((rule) => ({
      origins: all(rule, 'AllowedOrigin'),
      methods: all(rule, 'AllowedMethod'),
      headers: all(rule, 'AllowedHeader'),
      expose: all(rule, 'ExposeHeader'),
      maxAge: textOf(rule, 'MaxAgeSeconds'),
    }))
  } catch (error) {
    // A bucket without rules answers NoSuchCORSConfiguration: no rules.
    if (errorText(error).includes('CORS')) return []
    throw error
  }
}

const CORS_FIELDS: readonly [keyof CorsRule, string, string][] = [
  ['origins', 'Allowed origins', 'https://app.example.com, *'],
  ['methods', 'Allowed methods', 'GET, PUT'],
  ['headers', 'Allowed headers', '*'],
  ['expose', 'Expose headers', 'ETag'],
  ['maxAge', 'Max age (seconds)', '3000'],
]

function corsForm(rules: CorsRule[]): HTMLElement {
  const list = el('div', { class: 'cors-rules' })
  const addRule = (rule: CorsRule): void => {
    const index = list.children.length + 1
    const fields = CORS_FIELDS.map(([name, label, example]) => {
      const id = `cors-${index}-${name}`
      const input = el('input', {
        id,
        name,
        value: rule[name],
        placeholder: example,
        readonly: !writer,
      })
      return el('div', {}, el('label', { for: id }, `${label}, rule ${index}`), input)
    })
    const fieldset = el(
      'fieldset',
      { class: 'inline card', 'data-cors-rule': index },
      el('legend', {}, `Rule ${index}`),
      fields,
      writer
        ? el(
            'button',
            { type: 'button', class: 'secondary', onclick: () => fieldset.remove() },
            `Remove rule ${index}`,
          )
        : null,
    )
    list.append(fieldset)
  }
  rules.forEach(addRule)
  const form = el(
    'form',
    { 'aria-label': 'CORS rules' },
    el('h3', {}, 'CORS rules'),
    list,
    writer
      ? el(
          'div',
          { class: 'actions' },
          el(
            'button',
            {
              type: 'button',
              class: 'secondary',
              onclick: () =>
                addRule({ origins: '', methods: 'GET', headers: '', expose: '', maxAge: '' }),
            },
            'Add rule',
          ),
          el('button', { type: 'submit' }, 'Save CORS rules'),
        )
      : null,
  )
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    void attempt(async () => {
      const rulesXml = Array.from(list.querySelectorAll('fieldset')).map((fieldset) => {
        const value = (name: string): string =>
          fieldset.querySelector<HTMLInputElement>(`input[name="${name}"]`)?.value ?? ''
        const items = (name: string, tag: string): string =>
          value(name)
            .split(',')
            .map((item) => item.trim())
            .filter((item) => item !== '')
            .map((item) => `<${tag}>${escapeXml(item)}</${tag}>`)
            .join('')
        const maxAge = value('maxAge').trim()
        return (
          '<CORSRule>' +
          items('origins', 'AllowedOrigin') +
          items('methods', 'AllowedMethod') +
          items('headers', 'AllowedHeader') +
          items('expose', 'ExposeHeader') +
          (maxAge === '' ? '' : `<MaxAgeSeconds>${escapeXml(maxAge)}</MaxAgeSeconds>`) +
          '</CORSRule>'
        )
      })
      if (rulesXml.length === 0) {
        await s3(s3Path(bucket), { method: 'DELETE', query: { cors: '' } })
      } else {
        const body = `<CORSConfiguration>${rulesXml.join('')}</CORSConfiguration>`
        await s3(s3Path(bucket), { method: 'PUT', query: { cors: '' }, body })
      }
      await showSettings()
      notify('CORS rules saved.')
    })
  })
  return form
}

void attempt(async () => {
  await load()
  await showSettings()
})
