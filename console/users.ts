/** @module The Users page: every user with its role, state and S3 key; create a user, change a
 * role, deactivate and activate, create (or replace) and revoke S3 keys, delete. All through the
 * admin API (`/console/api/admin/...`), which only a SuperUser may call: anyone else sees its
 * refusal. A new secret key is shown once, as the admin API answers it once. */
import {
  api,
  ApiError,
  attempt,
  dataTable,
  el,
  errorText,
  formatTime,
  notify,
  render,
} from './common.js'

interface User {
  id: string
  username: string
  role: string
  is_active: boolean
  created_at: string
  access_key: string | null
}

interface Credentials {
  access_key: string
  secret_key: string
}

const ROLES = ['Reader', 'Writer', 'SuperUser'] as const

/** The secret of a key just made, shown until the next change of the page. */
let issued: { username: string; credentials: Credentials } | null = null

async function load(): Promise<void> {
  let users: User[]
  try {
    users = await api<User[]>('/console/api/admin/users')
  } catch (error) {
    const refused = error instanceof ApiError && error.status === 403
    render(
      el(
        'p',
        { class: 'notice error', role: 'alert' },
        refused ? `Users are managed by SuperUsers: ${errorText(error)}` : errorText(error),
      ),
    )
    return
  }
  users.sort((a, b) => a.username.localeCompare(b.username))
  render(
    issued === null ? null : secretBox(issued.username, issued.credentials),
    createForm(),
    dataTable(
      `${users.length} users`,
      ['Username', 'Role', 'State', 'S3 key', 'Created', 'Actions'],
      users.map(userRow),
    ),
  )
}

function secretBox(username: string, credentials: Credentials): HTMLElement {
  return el(
    'section',
    { class: 'card', 'aria-labelledby': 'secret-heading' },
    el('h2', { id: 'secret-heading' }, `New S3 key of ${username}`),
    el('p', {}, 'Copy the secret key now: it is shown this once.'),
    el(
      'dl',
      { class: 'meta' },
      el('dt', {}, 'Access key'),
      el('dd', { class: 'secret', 'data-field': 'access-key' }, credentials.access_key),
      el('dt', {}, 'Secret key'),
      el('dd', { class: 'secret', 'data-field': 'secret-key' }, credentials.secret_key),
    ),
    el('button', { type: 'button', class: 'secondary', onclick: () => dismissSecret() }, 'Done'),
  )
}

function dismissSecret(): void {
  issued = null
  void attempt(load)
}

function createForm(): HTMLElement {
  const username = el('input', {
    id: 'new-username',
    name: 'username',
    required: true,
    pattern: '[A-Za-z0-9_]{3,32}',
    title: '3 to 32 letters, digits or underscores',
    autocomplete: 'off',
  })
  const password = el('input', {
    id: 'new-password',
    name: 'password',
    type: 'password',
    required: true,
    autocomplete: 'new-password',
  })
  const role = el(
    'select',
    { id: 'new-role', name: 'role' },
    ROLES.map((name) => el('option', { value: name, selected: name === 'Reader' }, name)),
  )
  const form = el(
    'form',
    { class: 'inline', 'aria-label': 'Create a user' },
    el('div', {}, el('label', { for: 'new-username' }, 'New username'), username),
    el('div', {}, el('label', { for: 'new-password' }, 'New password'), password),
    el('div', {}, el('label', { for: 'new-role' }, 'Role'), role),
    el('button', { type: 'submit' }, 'Create user'),
  )
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    void attempt(async () => {
      const body = { username: username.value, password: password.value, role: role.value }
      const user = await api<User>('/console/api/admin/users', { method: 'POST', body })
      issued = null
      await load()
      notify(`User ${user.username} created.`)
    })
  })
  return form
}

function userRow(user: User): HTMLElement {
  const role = el(
    'select',
    { 'aria-label': `Role of ${user.username}` },
    ROLES.map((name) => el('option', { value: name, selected: name === user.role }, name)),
  )
  role.addEventListener('change', () => {
    void change(user, { role: role.value }, `${user.username} is now ${role.value}.`)
  })
  const key =
    user.access_key === null
      ? el('span', { class: 'muted' }, 'none')
      : el('code', {}, user.access_key)
  return el(
    'tr',
    { 'data-user': user.username },
    el('th', { scope: 'row' }, user.username),
    el('td', {}, role),
    el(
      'td',
      {},
      el(
        'span',
        { class: `badge ${user.is_active ? 'up' : 'down'}` },
        user.is_active ? 'active' : 'inactive',
      ),
    ),
    el('td', {}, key),
    el('td', {}, formatTime(user.created_at)),
    el(
      'td',
      {},
      el(
        'div',
        { class: 'actions' },
        el(
          'button',
          {
            type: 'button',
            class: 'secondary',
            onclick: () =>
              void change(
                user,
                { is_active: !user.is_active },
                `${user.username} is ${user.is_active ? 'deactivated' : 'active'}.`,
              ),
          },
          user.is_active ? 'Deactivate' : 'Activate',
        ),
        el(
          'button',
          { type: 'button', class: 'secondary', onclick: () => void createKey(user) },
          user.access_key === null ? 'Create key' : 'Replace key',
        ),
        user.access_key === null
          ? null
          : el(
              'button',
              { type: 'button', class: 'secondary', onclick: () => void revokeKey(user) },
              'Revoke key',
            ),
        el(
          'button',
          { type: 'button', class: 'danger', onclick: () => void remove(user) },
          'Delete',
        ),
      ),
    ),
  )
}

function userPath(user: User): string {
  return `/console/api/admin/users/${encodeURIComponent(user.id)}`
}

function change(user: User, body: Record<string, unknown>, done: string): Promise<void> {
  return attempt(async () => {
    await api<User>(userPath(user), { method: 'PUT', body })
    await load()
    notify(done)
  })
}

function createKey(user: User): Promise<void> {
  return attempt(async () => {
    const credentials = await api<Credentials>(`${userPath(user)}/credentials`, {
      method: 'POST',
    })
    issued = { username: user.username, credentials }
    await load()
    notify(`S3 key created for ${user.username}.`)
  })
}

function revokeKey(user: User): Promise<void> {
  if (!window.confirm(`Revoke the S3 key of ${user.username}? Requests signed with it stop.`)) {
    return Promise.resolve()
  }
  return attempt(async () => {
    await api<null>(`${userPath(user)}/credentials`, { method: 'DELETE' })
    issued = null
    await load()
    notify(`The S3 key of ${user.username} is revoked.`)
  })
}

function remove(user: User): Promise<void> {
  if (!window.confirm(`Delete the user ${user.username}?`)) return Promise.resolve()
  return attempt(async () => {
    await api<null>(userPath(user), { method: 'DELETE' })
    issued = null
    await load()
    notify(`User ${user.username} deleted.`)
  })
}

void attempt(load)
