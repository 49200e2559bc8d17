/** @module The bucket page's lifecycle form: rules of a prefix that expire current versions,
 * noncurrent versions and incomplete uploads after some days, through the S3 API (`?lifecycle`).
 * A rule the form cannot show whole (tags, sizes, a date, kept versions, delete markers) is listed
 * as it is and saved unchanged, never rewritten without what the form does not know. */
import {
  ApiError,
  attempt,
  childrenNamed,
  el,
  notify,
  parseXml,
  s3,
  s3Path,
  textOf,
} from './common.js'

interface SimpleRule {
  id: string
  prefix: string
  enabled: boolean
  expireDays: string
  noncurrentDays: string
  abortDays: string
}

const FIELDS: readonly [keyof SimpleRule, string][] = [
  ['id', 'Rule ID'],
  ['prefix', 'Prefix'],
  ['expireDays', 'Expire objects after (days)'],
  ['noncurrentDays', 'Remove old versions after (days)'],
  ['abortDays', 'Abort incomplete uploads after (days)'],
]

const SIMPLE_CHILDREN = new Set([
  'ID',
  'Filter',
  'Prefix',
  'Status',
  'Expiration',
  'NoncurrentVersionExpiration',
  'AbortIncompleteMultipartUpload',
])

/** The rule as the form's fields, or null when it holds more than they show. */
function simpleRule(rule: Element): SimpleRule | null {
  const children = Array.from(rule.children)
  if (!children.every((child) => SIMPLE_CHILDREN.has(child.localName))) return null
  const filter = childrenNamed(rule, 'Filter')[0]
  if (filter !== undefined && Array.from(filter.children).some((c) => c.localName !== 'Prefix')) {
    return null
  }
  const only = (name: string, inner: string): string | null => {
    const node = childrenNamed(rule, name)[0]
    if (node === undefined) return ''
    const names = Array.from(node.children).map((child) => child.localName)
    return names.length === 1 && names[0] === inner ? textOf(node, inner) : null
  }
  const expireDays = only('Expiration', 'Days')
  const noncurrentDays = only('NoncurrentVersionExpiration', 'NoncurrentDays')
  const abortDays = only('AbortIncompleteMultipartUpload', 'DaysAfterInitiation')
  if (expireDays === null || noncurrentDays === null || abortDays === null) return null
  return {
    id: textOf(rule, 'ID'),
    prefix: filter !== undefined ? textOf(filter, 'Prefix') : textOf(rule, 'Prefix'),
    enabled: textOf(rule, 'Status') === 'Enabled',
    expireDays,
    noncurrentDays,
    abortDays,
  }
}

async function readRules(bucket: string): Promise<Element[]> {
  try {
    const answer = await s3(s3Path(bucket), { query: { lifecycle: '' } })
    return childrenNamed(parseXml(await answer.text()).documentElement, 'Rule')
  } catch (error) {
    if (error instanceof ApiError && error.code === 'NoSuchLifecycleConfiguration') return []
    throw error
  }
}

function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`)
}

function ruleXml(rule: SimpleRule): string {
  const days = (element: string, inner: string, value: string): string =>
    value.trim() === '' ? '' : `<${element}><${inner}>${Number(value)}</${inner}></${element}>`
  return (
    '<Rule>' +
    (rule.id.trim() === '' ? '' : `<ID>${escapeXml(rule.id.trim())}</ID>`) +
    `<Filter><Prefix>${escapeXml(rule.prefix)}</Prefix></Filter>` +
    `<Status>${rule.enabled ? 'Enabled' : 'Disabled'}</Status>` +
    days('Expiration', 'Days', rule.expireDays) +
    days('NoncurrentVersionExpiration', 'NoncurrentDays', rule.noncurrentDays) +
    days('AbortIncompleteMultipartUpload', 'DaysAfterInitiation', rule.abortDays) +
    '</Rule>'
  )
}

export async function lifecycleForm(
  bucket: string,
  editable: boolean,
  done: () => Promise<void>,
): Promise<HTMLElement> {
  const rules = await readRules(bucket)
  const kept = rules.filter((rule) => simpleRule(rule) === null)
  const list = el('div', { class: 'lifecycle-rules' })
  const addRule = (rule: SimpleRule): void => {
    const index = list.children.length + 1
    const fields = FIELDS.map(([name, label]) => {
      const id = `lifecycle-${index}-${name}`
      return el(
        'div',
        {},
        el('label', { for: id }, `${label}, rule ${index}`),
        el('input', {
          id,
          name,
          type: name === 'id' || name === 'prefix' ? 'text' : 'number',
          readonly: !editable,
          value: String(rule[name]),
          ...(name === 'id' || name === 'prefix' ? {} : { min: '1', step: '1' }),
        }),
      )
    })
    const enabledId = `lifecycle-${index}-enabled`
    const fieldset = el(
      'fieldset',
      { class: 'inline card', 'data-lifecycle-rule': index },
      el('legend', {}, `Rule ${index}`),
      ...fields,
      el(
        'div',
        {},
        el('input', {
          id: enabledId,
          name: 'enabled',
          type: 'checkbox',
          checked: rule.enabled,
          disabled: !editable,
        }),
        el('label', { for: enabledId }, `Enabled, rule ${index}`),
      ),
      editable
        ? el(
            'button',
            { type: 'button', class: 'secondary', onclick: () => fieldset.remove() },
            `Remove lifecycle rule ${index}`,
          )
        : null,
    )
    list.append(fieldset)
  }
  for (const rule of rules) {
    const simple = simpleRule(rule)
    if (simple !== null) addRule(simple)
  }
  const keptNote =
    kept.length === 0
      ? null
      : el(
          'p',
          {},
          `${kept.length} rule(s) with filters or actions this form does not show are kept as ` +
            'they are: ' +
            kept.map((rule) => textOf(rule, 'ID') || '(no ID)').join(', '),
        )
  const form = el(
    'form',
    { 'aria-label': 'Lifecycle rules' },
    el('h3', {}, 'Lifecycle rules'),
    list,
    keptNote,
    editable
      ? el(
          'div',
          { class: 'actions' },
          el(
            'button',
            {
              type: 'button',
              class: 'secondary',
              onclick: () =>
                addRule({
                  id: '',
                  prefix: '',
                  enabled: true,
                  expireDays: '',
                  noncurrentDays: '',
                  abortDays: '',
                }),
            },
            'Add lifecycle rule',
          ),
          el('button', { type: 'submit' }, 'Save lifecycle rules'),
        )
      : null,
  )
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    void attempt(async () => {
      const edited = Array.from(list.querySelectorAll('fieldset')).map((fieldset) => {
        const value = (name: string): string =>
          fieldset.querySelector<HTMLInputElement>(`input[name="${name}"]`)?.value ?? ''
        const enabled =
          fieldset.querySelector<HTMLInputElement>('input[name="enabled"]')?.checked ?? true
        return ruleXml({
          id: value('id'),
          prefix: value('prefix'),
          enabled,
          expireDays: value('expireDays'),
          noncurrentDays: value('noncurrentDays'),
          abortDays: value('abortDays'),
        })
      })
      const verbatim = kept.map((rule) => new XMLSerializer().serializeToString(rule))
      const all = [...edited, ...verbatim]
      if (all.length === 0) {
        await s3(s3Path(bucket), { method: 'DELETE', query: { lifecycle: '' } })
      } else {
        const body = `<LifecycleConfiguration>${all.join('')}</LifecycleConfiguration>`
        await s3(s3Path(bucket), { method: 'PUT', query: { lifecycle: '' }, body })
      }
      await done()
      notify('Lifecycle rules saved.')
    })
  })
  return form
}
