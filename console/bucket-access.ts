/** @module The bucket page's access settings: the bucket policy (its JSON, edited as text, with
 * whether it makes the bucket public) and the bucket's canned ACL. Both through the S3 API with
 * the user's rights: only a SuperUser (or a user a policy lets) changes them, and the page shows
 * S3's refusal to the others. An object's canned ACL is in its details (objectAclForm). */
import { ApiError, attempt, el, notify, parseXml, s3, s3Path, textOf } from './common.js'

/** The example a new policy starts from: anyone may read the bucket's objects. */
function publicReadExample(bucket: string): string {
  const statement = {
    Sid: 'PublicRead',
    Effect: 'Allow',
    Principal: '*',
    Action: 's3:GetObject',
    Resource: `arn:aws:s3:::${bucket}/*`,
  }
  return JSON.stringify({ Version: '2012-10-17', Statement: [statement] }, null, 2)
}

/** The policy's text, or '' when the bucket has none (NoSuchBucketPolicy). */
async function readPolicy(bucket: string): Promise<{ text: string; isPublic: boolean }> {
  try {
    const text = await (await s3(s3Path(bucket), { query: { policy: '' } })).text()
    const status = parseXml(
      await (await s3(s3Path(bucket), { query: { policyStatus: '' } })).text(),
    )
    return { text, isPublic: textOf(status.documentElement, 'IsPublic') === 'true' }
  } catch (error) {
    if (error instanceof ApiError && error.code === 'NoSuchBucketPolicy') {
      return { text: '', isPublic: false }
    }
    throw error
  }
}

async function readAcl(bucket: string): Promise<string> {
  const doc = parseXml(await (await s3(s3Path(bucket), { query: { acl: '' } })).text())
  const uris = Array.from(doc.getElementsByTagName('URI')).map((node) => node.textContent ?? '')
  if (uris.some((uri) => uri.endsWith('/AllUsers'))) return 'public-read'
  if (uris.some((uri) => uri.endsWith('/AuthenticatedUsers'))) return 'authenticated-read'
  return 'private'
}

/** The two forms, read afresh; `done` redraws the settings after a change. */
export async function accessForms(
  bucket: string,
  editable: boolean,
  done: () => Promise<void>,
): Promise<HTMLElement[]> {
  const [policy, acl] = await Promise.all([readPolicy(bucket), readAcl(bucket)])
  return [policyForm(bucket, policy, editable, done), aclForm(bucket, acl, editable, done)]
}

function policyForm(
  bucket: string,
  policy: { text: string; isPublic: boolean },
  editable: boolean,
  done: () => Promise<void>,
): HTMLElement {
  const area = el('textarea', {
    id: 'bucket-policy',
    rows: 12,
    spellcheck: false,
    readonly: !editable,
    placeholder: publicReadExample(bucket),
  })
  area.value = policy.text
  const state =
    policy.text === ''
      ? 'This bucket has no policy.'
      : policy.isPublic
        ? 'This policy makes the bucket public: anyone may do what it allows.'
        : 'This policy does not make the bucket public.'
  const remove = el('button', { type: 'button', class: 'secondary' }, 'Remove policy')
  remove.addEventListener('click', () => {
    if (!window.confirm(`Remove the policy of ${bucket}?`)) return
    void attempt(async () => {
      await s3(s3Path(bucket), { method: 'DELETE', query: { policy: '' } })
      await done()
      notify('Bucket policy removed.')
    })
  })
  const example = el('button', { type: 'button', class: 'secondary' }, 'Public-read example')
  example.addEventListener('click', () => {
    area.value = publicReadExample(bucket)
    area.focus()
  })
  const form = el(
    'form',
    { 'aria-label': 'Bucket policy' },
    el('h3', {}, 'Bucket policy'),
    el('p', { id: 'policy-state' }, state),
    el('label', { for: 'bucket-policy' }, 'Policy (JSON)'),
    area,
    editable
      ? el(
          'div',
          { class: 'actions' },
          example,
          policy.text === '' ? null : remove,
          el('button', { type: 'submit' }, 'Save policy'),
        )
      : null,
  )
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    void attempt(async () => {
      await s3(s3Path(bucket), { method: 'PUT', query: { policy: '' }, body: area.value })
      await done()
      notify('Bucket policy saved.')
    })
  })
  return form
}

function aclForm(
  bucket: string,
  acl: string,
  editable: boolean,
  done: () => Promise<void>,
): HTMLElement {
  const choices: [string, string][] = [
    ['private', 'Private'],
    ['public-read', 'Public read (anyone lists)'],
    ['authenticated-read', 'Authenticated read'],
  ]
  const select = el(
    'select',
    { id: 'bucket-acl', disabled: !editable },
    choices.map(([value, label]) => el('option', { value, selected: value === acl }, label)),
  )
  const form = el(
    'form',
    { class: 'inline', 'aria-label': 'Bucket ACL' },
    el('div', {}, el('label', { for: 'bucket-acl' }, 'Access list (ACL)'), select),
    editable ? el('button', { type: 'submit' }, 'Save ACL') : null,
  )
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    void attempt(async () => {
      const headers = { 'x-amz-acl': select.value }
      await s3(s3Path(bucket), { method: 'PUT', query: { acl: '' }, headers })
      await done()
      notify(`The bucket's ACL is ${select.value}.`)
    })
  })
  return form
}

/** An object's canned ACL (or the named version's), from GetObjectAcl's grants. */
export async function objectAclForm(
  bucket: string,
  key: string,
  versionId: string | null,
  editable: boolean,
  done: () => Promise<void>,
): Promise<HTMLElement> {
  const query: Record<string, string> = { acl: '', ...(versionId === null ? {} : { versionId }) }
  const doc = parseXml(await (await s3(s3Path(bucket, key), { query })).text())
  const uris = Array.from(doc.getElementsByTagName('URI')).map((node) => node.textContent ?? '')
  const acl = uris.some((uri) => uri.endsWith('/AllUsers')) ? 'public-read' : 'private'
  const select = el(
    'select',
    { id: 'object-acl', disabled: !editable },
    [
      ['private', 'Private'],
      ['public-read', 'Public read (anyone downloads)'],
    ].map(([value, label]) => el('option', { value, selected: value === acl }, label)),
  )
  const form = el(
    'form',
    { class: 'inline', 'aria-label': 'Object ACL' },
    el('div', {}, el('label', { for: 'object-acl' }, 'Object access list (ACL)'), select),
    editable ? el('button', { type: 'submit' }, 'Save object ACL') : null,
  )
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    void attempt(async () => {
      const headers = { 'x-amz-acl': select.value }
      await s3(s3Path(bucket, key), { method: 'PUT', query, headers })
      await done()
      notify(`The object's ACL is ${select.value}.`)
    })
  })
  return form
}
