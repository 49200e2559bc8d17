/** @module The bucket page's quota form: the bucket's bounds of size (in MiB) and object count,
 * with its usage, through the admin API (`/console/api/admin/buckets/{name}/quota`), which is a
 * SuperUser's alone; other users are shown nothing of it. */
import { api, attempt, el, formatBytes, notify } from './common.js'

interface QuotaView {
  max_size_bytes: number | null
  max_objects: number | null
  size_bytes: number
  objects: number
}

const MIB = 1024 * 1024

function quotaPath(bucket: string): string {
  return `/console/api/admin/buckets/${encodeURIComponent(bucket)}/quota`
}

/** The form, or null for a user who may not see quotas. */
export async function quotaForm(
  bucket: string,
  superUser: boolean,
  done: () => Promise<void>,
): Promise<HTMLElement | null> {
  if (!superUser) return null
  const quota = await api<QuotaView>(quotaPath(bucket))
  const size = el('input', {
    id: 'quota-size',
    type: 'number',
    min: '0',
    step: 'any',
    inputmode: 'decimal',
    value: quota.max_size_bytes === null ? '' : String(quota.max_size_bytes / MIB),
  })
  const objects = el('input', {
    id: 'quota-objects',
    type: 'number',
    min: '0',
    step: '1',
    inputmode: 'numeric',
    value: quota.max_objects === null ? '' : String(quota.max_objects),
  })
  const usage =
    `Holds ${formatBytes(quota.size_bytes)} in ${quota.objects} objects. ` +
    'An empty field sets no bound.'
  const form = el(
    'form',
    { 'aria-label': 'Bucket quota' },
    el('h3', {}, 'Quota'),
    el('p', { id: 'quota-usage' }, usage),
    el(
      'div',
      { class: 'inline' },
      el('div', {}, el('label', { for: 'quota-size' }, 'Maximum size (MiB)'), size),
      el('div', {}, el('label', { for: 'quota-objects' }, 'Maximum objects'), objects),
    ),
    el('div', { class: 'actions' }, el('button', { type: 'submit' }, 'Save quota')),
  )
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    void attempt(async () => {
      const bound = (input: HTMLInputElement, scale: number): number | null =>
        input.value.trim() === '' ? null : Math.round(Number(input.value) * scale)
      const body = { max_size_bytes: bound(size, MIB), max_objects: bound(objects, 1) }
      await api(quotaPath(bucket), { method: 'PUT', body })
      await done()
      notify('Quota saved.')
    })
  })
  return form
}
