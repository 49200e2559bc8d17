/** @module Object lock on the bucket page: the bucket's default retention (when the bucket has
 * object lock) among its settings, and an object's retention and legal hold in its details. All
 * through the S3 API with the user's rights; S3's refusals (a COMPLIANCE retention shortened, a
 * GOVERNANCE one without the right to bypass it) are shown as they come. */
import { ApiError, attempt, el, notify, parseXml, s3, s3Path, textOf } from './common.js'

/** The bucket's lock configuration document, or null when the bucket has no object lock. */
export async function readLockConfiguration(bucket: string): Promise<Document | null> {
  try {
    const answer = await s3(s3Path(bucket), { query: { 'object-lock': '' } })
    return parseXml(await answer.text())
  } catch (error) {
    if (error instanceof ApiError && error.code === 'ObjectLockConfigurationNotFoundError') {
      return null
    }
    throw error
  }
}

export function defaultRetentionForm(
  bucket: string,
  config: Document,
  editable: boolean,
  done: () => Promise<void>,
): HTMLElement {
  const root = config.documentElement
  const current = textOf(root, 'Mode')
  const mode = el(
    'select',
    { id: 'lock-mode', disabled: !editable },
    ['None', 'GOVERNANCE', 'COMPLIANCE'].map((value) =>
      el('option', { value, selected: value === (current || 'None') }, value),
    ),
  )
  const days = el('input', {
    id: 'lock-days',
    type: 'number',
    min: '1',
    step: '1',
    inputmode: 'numeric',
    readonly: !editable,
    value: textOf(root, 'Days'),
  })
  const form = el(
    'form',
    { 'aria-label': 'Object lock' },
    el('h3', {}, 'Object lock'),
    el('p', {}, 'Object lock is on: versioning stays Enabled, and protected versions stay.'),
    el(
      'div',
      { class: 'inline' },
      el('div', {}, el('label', { for: 'lock-mode' }, 'Default retention'), mode),
      el('div', {}, el('label', { for: 'lock-days' }, 'Days'), days),
    ),
    editable
      ? el('div', { class: 'actions' }, el('button', { type: 'submit' }, 'Save default retention'))
      : null,
  )
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    void attempt(async () => {
      const rule =
        mode.value === 'None'
          ? ''
          : `<Rule><DefaultRetention><Mode>${mode.value}</Mode>` +
            `<Days>${Number(days.value)}</Days></DefaultRetention></Rule>`
      const body =
        `<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled>${rule}` +
        '</ObjectLockConfiguration>'
      await s3(s3Path(bucket), { method: 'PUT', query: { 'object-lock': '' }, body })
      await done()
      notify('Default retention saved.')
    })
  })
  return form
}

/** An object's retention and legal hold, from its HEAD's headers. */
export function objectLockForm(
  bucket: string,
  key: string,
  head: Response,
  editable: boolean,
  done: () => Promise<void>,
): HTMLElement {
  const held = head.headers.get('x-amz-object-lock-mode') ?? 'None'
  const until = head.headers.get('x-amz-object-lock-retain-until-date') ?? ''
  const mode = el(
    'select',
    { id: 'retention-mode', disabled: !editable },
    ['None', 'GOVERNANCE', 'COMPLIANCE'].map((value) =>
      el('option', { value, selected: value === held }, value),
    ),
  )
  const date = el('input', {
    id: 'retention-until',
    type: 'date',
    readonly: !editable,
    value: until.slice(0, 10),
  })
  const bypass = el('input', { id: 'retention-bypass', type: 'checkbox', disabled: !editable })
  const hold = el('input', {
    id: 'legal-hold',
    type: 'checkbox',
    disabled: !editable,
    checked: head.headers.get('x-amz-object-lock-legal-hold') === 'ON',
  })
  const versionId = head.headers.get('x-amz-version-id')
  const query = (name: string): Record<string, string> => ({
    [name]: '',
    ...(versionId === null ? {} : { versionId }),
  })
  const retention = el(
    'form',
    { 'aria-label': 'Retention' },
    el('h3', {}, 'Retention'),
    el(
      'div',
      { class: 'inline' },
      el('div', {}, el('label', { for: 'retention-mode' }, 'Mode'), mode),
      el('div', {}, el('label', { for: 'retention-until' }, 'Retain until'), date),
      el('div', {}, bypass, el('label', { for: 'retention-bypass' }, 'Bypass governance')),
    ),
    editable ? el('button', { type: 'submit' }, 'Save retention') : null,
  )
  retention.addEventListener('submit', (event) => {
    event.preventDefault()
    void attempt(async () => {
      const body =
        mode.value === 'None'
          ? '<Retention></Retention>'
          : `<Retention><Mode>${mode.value}</Mode>` +
            `<RetainUntilDate>${date.value}T00:00:00.000Z</RetainUntilDate></Retention>`
      const headers: Record<string, string> = bypass.checked
        ? { 'x-amz-bypass-governance-retention': 'true' }
        : {}
      await s3(s3Path(bucket, key), { method: 'PUT', query: query('retention'), headers, body })
      await done()
      notify('Retention saved.')
    })
  })
  const legal = el(
    'form',
    { class: 'inline', 'aria-label': 'Legal hold' },
    el('div', {}, hold, el('label', { for: 'legal-hold' }, 'Legal hold')),
    editable ? el('button', { type: 'submit' }, 'Save legal hold') : null,
  )
  legal.addEventListener('submit', (event) => {
    event.preventDefault()
    void attempt(async () => {
      const body = `<LegalHold><Status>${hold.checked ? 'ON' : 'OFF'}</Status></LegalHold>`
      await s3(s3Path(bucket, key), { method: 'PUT', query: query('legal-hold'), body })
      await done()
      notify(`Legal hold ${hold.checked ? 'on' : 'off'}.`)
    })
  })
  return el('div', {}, retention, legal)
}
