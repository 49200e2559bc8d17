/** @module The admin API as integration tests drive it: JSON over fetch with a bearer token, and
 * the few calls that set up identities (log in, create a user, issue S3 keys), each asserting its
 * success status so a test reads as its scenario. */
import * as assert from 'uvu/assert'
import type { TestServer } from './server.js'

export interface Credentials {
  access_key: string
  secret_key: string
}

export async function admin(
  server: Pick<TestServer, 'url'>,
  method: string,
  path: string,
  token?: string,
  body?: unknown,
): Promise<{ status: number; json: unknown; headers: Headers; text: string }> {
  const headers: Record<string, string> = {}
  if (token !== undefined) headers['authorization'] = `Bearer ${token}`
  if (body !== undefined) headers['content-type'] = 'application/json'
  const response = await fetch(`${server.url}/api/admin${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const text = await response.text()
  return {
    status: response.status,
    json: text === '' ? null : (JSON.parse(text) as unknown),
    headers: response.headers,
    text,
  }
}

export async function login(
  server: Pick<TestServer, 'url'>,
  username: string,
  password: string,
): Promise<string> {
  const answer = await admin(server, 'POST', '/login', undefined, { username, password })
  assert.is(answer.status, 200, answer.text)
  return (answer.json as { token: string }).token
}

export async function createUser(
  server: Pick<TestServer, 'url'>,
  token: string,
  username: string,
  role: string,
): Promise<string> {
  const created = await admin(server, 'POST', '/users', token, {
    username,
    password: `${username}-password`,
    role,
  })
  assert.is(created.status, 201, created.text)
  return (created.json as { id: string }).id
}

export async function issueKeys(
  server: Pick<TestServer, 'url'>,
  token: string,
  userId: string,
): Promise<Credentials> {
  const issued = await admin(server, 'POST', `/users/${userId}/credentials`, token)
  assert.is(issued.status, 201, issued.text)
  return issued.json as Credentials
}
