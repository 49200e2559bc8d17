/** @module The servers under test, each started as a child process on 127.0.0.1 with a fresh temp
 * dir: the service (dist/runtime/main.js) with one ingress thread and with two, s3rver
 * (bench/s3rver-main.ts), nginx with WebDAV PUT as the limit of HTTP-to-disk, the floor of a
 * Node.js server that hashes as S3 must and stores nothing (bench/floor-main.ts), and a cluster
 * of 3 service nodes (cluster-target.ts). A target that cannot start says why and is skipped.
 * Stopping is by PID (processes.ts); the temp dir goes with the target. */
import { existsSync, mkdirSync, mkdtempSync } from 'node:fs'
import { rmSync, writeFileSync } from 'node:fs'
import type { ChildProcess } from 'node:child_process'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startCluster } from './cluster-target.js'
import { HEALTH_WAIT_MS } from './config.js'
import { presigner, type Presign } from './presign.js'
import { freePort, logTail, SERVICE_MAIN, spawnLogged, stopProcess, waitUp } from './processes.js'
import { processTree } from './rss.js'

/** The service with one ingress thread, and with two: the node's ceiling compares them. */
export type ServiceName = 'service' | 'service-2w'
export const SERVICE_NAMES: readonly ServiceName[] = ['service', 'service-2w']
/** The targets of one server, whose phases compare with each other, column by column. */
export type ServerName = ServiceName | 's3rver' | 'nginx' | 'floor'
export const SERVER_NAMES: readonly ServerName[] = [...SERVICE_NAMES, 's3rver', 'nginx', 'floor']
export type TargetName = ServerName | 'cluster'
/** In the order they run: the cluster last, so the single servers run exactly as without it. */
export const TARGET_NAMES: readonly TargetName[] = [...SERVER_NAMES, 'cluster']

/** One server: its address for the load generator, and its processes. */
export interface Endpoint {
  origin: string
  /** Signs a request; null for nginx and the floor, which take the same paths unsigned. */
  presign: Presign | null
  /** The server's processes now (main and descendants): their memory and CPU are the server's.
   * A target's are those of all its nodes. */
  pids(): number[]
}

export interface Target extends Endpoint {
  name: TargetName
  /** Every node of the target (one for a single server), the first being `origin`'s. */
  nodes: readonly Endpoint[]
  stop(): Promise<void>
}

/** `reason` is one line; `log` is the tail of the server's own output, when it has any. */
export type Started = { ok: true; target: Target } | { ok: false; reason: string; log?: string }

const here = dirname(fileURLToPath(import.meta.url))
const S3RVER_MAIN = join(here, 's3rver-main.js')
const FLOOR_MAIN = join(here, 'floor-main.js')
const NGINX_BINARY = '/usr/sbin/nginx'
const SERVICE_CREDENTIALS = {
  accessKeyId: 'benchkey',
  secretAccessKey: 'benchsecretbenchsecretbenchsecret1234',
}
/** Each service target's own settings, the one place they are set: a setting that must match the
 * ingress threads (a shard count) joins SVC_HTTP_WORKERS here. */
export const SERVICE_ENV: Readonly<Record<ServiceName, Readonly<Record<string, string>>>> = {
  service: { SVC_HTTP_WORKERS: '1', SVC_STORE_SHARDS: '1' },
  'service-2w': { SVC_HTTP_WORKERS: '2', SVC_STORE_SHARDS: '2' },
}
const S3RVER_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' }

export function start(name: TargetName): Promise<Started> {
  switch (name) {
    case 'service':
    case 'service-2w':
      return startService(name)
    case 's3rver':
      return startS3rver()
    case 'nginx':
      return startNginx()
    case 'floor':
      return startFloor()
    case 'cluster':
      return startCluster()
  }
}

export function isService(name: TargetName): name is ServiceName {
  return (SERVICE_NAMES as readonly string[]).includes(name)
}

async function startService(name: ServiceName): Promise<Started> {
  if (!existsSync(SERVICE_MAIN)) return { ok: false, reason: `${SERVICE_MAIN} does not exist` }
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), 'bench-service-'))
  const env = {
    ...process.env,
    SVC_NODE_HTTP_ADDR: `127.0.0.1:${port}`,
    SVC_DATA_DIR: join(dir, 'data'),
    SVC_ACCESS_KEY_ID: SERVICE_CREDENTIALS.accessKeyId,
    SVC_SECRET_ACCESS_KEY: SERVICE_CREDENTIALS.secretAccessKey,
    ...SERVICE_ENV[name],
  }
  mkdirSync(env.SVC_DATA_DIR)
  const server = spawnLogged(process.execPath, [SERVICE_MAIN], env, join(dir, 'service.log'))
  const presign = presigner(port, SERVICE_CREDENTIALS)
  return ready(name, server, dir, port, presign, (status) => status === 200, '/health')
}

async function startS3rver(): Promise<Started> {
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), 'bench-s3rver-'))
  mkdirSync(join(dir, 'data'))
  // s3rver's continuation tokens use DES, which OpenSSL 3 keeps in its legacy provider: without
  // it every listing longer than a page fails with 500 (ERR_OSSL_EVP_UNSUPPORTED).
  const args = ['--openssl-legacy-provider', S3RVER_MAIN, String(port), join(dir, 'data')]
  const server = spawnLogged(process.execPath, args, process.env, join(dir, 's3rver.log'))
  const presign = presigner(port, S3RVER_CREDENTIALS)
  // s3rver has no health route: any HTTP answer (403 to an unsigned ListBuckets) means it is up.
  return ready('s3rver', server, dir, port, presign, () => true, '/')
}

async function startNginx(): Promise<Started> {
  if (!existsSync(NGINX_BINARY)) {
    return { ok: false, reason: `${NGINX_BINARY} not found (bash .ci/bench-deps installs it)` }
  }
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), 'bench-nginx-'))
  mkdirSync(join(dir, 'root'))
  mkdirSync(join(dir, 'body-temp'))
  writeFileSync(join(dir, 'nginx.conf'), nginxConf(dir, port))
  const args = ['-c', join(dir, 'nginx.conf'), '-p', dir]
  const server = spawnLogged(NGINX_BINARY, args, process.env, join(dir, 'nginx.log'))
  return ready('nginx', server, dir, port, null, () => true, '/')
}

async function startFloor(): Promise<Started> {
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), 'bench-floor-'))
  const server = spawnLogged(
    process.execPath,
    [FLOOR_MAIN, String(port)],
    process.env,
    join(dir, 'floor.log'),
  )
  // It answers 404 to a path it holds nothing for: any answer means it is up.
  return ready('floor', server, dir, port, null, () => true, '/')
}

/** Everything inside `dir`, so nothing touches the system's nginx; body temp files sit on the
 * root's filesystem so a finished PUT is a rename, not a copy. */
function nginxConf(dir: string, port: number): string {
  // Workers of a root master run as nobody by default and could not write into our temp dir.
  const user = process.getuid?.() === 0 ? 'user root;' : ''
  return `${user}
daemon off;
master_process on;
worker_processes auto;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  client_max_body_size 0;
  client_body_temp_path ${dir}/body-temp;
  proxy_temp_path ${dir}/proxy-temp;
  fastcgi_temp_path ${dir}/fastcgi-temp;
  uwsgi_temp_path ${dir}/uwsgi-temp;
  scgi_temp_path ${dir}/scgi-temp;
  server {
    listen 127.0.0.1:${port};
    root ${dir}/root;
    location / {
      dav_methods PUT DELETE;
      create_full_put_path on;
    }
  }
}
`
}

async function ready(
  name: ServerName,
  server: ChildProcess,
  dir: string,
  port: number,
  presign: Presign | null,
  isUp: (status: number) => boolean,
  probePath: string,
): Promise<Started> {
  const origin = `http://127.0.0.1:${port}`
  const pid = server.pid
  const stop = async (): Promise<void> => {
    await stopProcess(server)
    rmSync(dir, { recursive: true, force: true })
  }
  if (pid === undefined) {
    await stop()
    return { ok: false, reason: `${name} did not spawn` }
  }
  const failure = await waitUp(server, origin + probePath, isUp, HEALTH_WAIT_MS)
  if (failure !== null) {
    const log = logTail(dir, ['service.log', 's3rver.log', 'nginx.log', 'error.log', 'floor.log'])
    await stop()
    return log === '' ? { ok: false, reason: failure } : { ok: false, reason: failure, log }
  }
  const pids = (): number[] => processTree(pid)
  const target: Target = { name, origin, presign, nodes: [{ origin, presign, pids }], pids, stop }
  return { ok: true, target }
}
