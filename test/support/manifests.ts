/** @module Reading deploy/'s compose files and Kubernetes manifests as data for static checks:
 * every YAML document of a file (merge keys resolved, as Compose does), the containers of a
 * workload, and the variables a container gets (its own `env` and the keys of the Secrets its
 * `envFrom` names). */
import { readFileSync } from 'node:fs'
import { parseAllDocuments } from 'yaml'

/** A parsed YAML mapping, read loosely: the checks assert the shape they rely on. */
export type Manifest = Record<string, unknown> & {
  kind?: string
  metadata?: { name?: string; labels?: Record<string, string> }
  spec?: Record<string, unknown>
}

export interface EnvEntry {
  name: string
  value?: string
  valueFrom?: { fieldRef?: { fieldPath?: string } }
}

export interface Container {
  name: string
  image?: string
  ports?: { name?: string; containerPort: number }[]
  env?: EnvEntry[]
  envFrom?: { secretRef?: { name: string } }[]
  readinessProbe?: Probe
  livenessProbe?: Probe
  startupProbe?: Probe
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> }
  volumeMounts?: { name: string; mountPath: string }[]
}

export interface Probe {
  httpGet?: { path?: string; port?: number | string }
}

/** Every document of a YAML file; a syntax error fails with the file's name. */
export function yamlDocuments(path: string): Manifest[] {
  return parseAllDocuments(readFileSync(path, 'utf8'), { merge: true }).map((document) => {
    if (document.errors.length > 0) throw new Error(`${path}: ${document.errors.join('; ')}`)
    return document.toJS() as Manifest
  })
}

/** The one manifest of a kind (and name), or an error naming what is missing. */
export function manifestOf(manifests: Manifest[], kind: string, name?: string): Manifest {
  const found = manifests.filter(
    (manifest) =>
      manifest.kind === kind && (name === undefined || manifest.metadata?.name === name),
  )
  if (found.length !== 1) throw new Error(`expected one ${kind} ${name ?? ''}, ${found.length}`)
  return found[0] as Manifest
}

/** The pod template's labels and containers of a StatefulSet or Deployment. */
export function podOf(workload: Manifest): {
  labels: Record<string, string>
  containers: Container[]
} {
  const template = workload.spec?.['template'] as
    | { metadata?: { labels?: Record<string, string> }; spec?: { containers?: Container[] } }
    | undefined
  return {
    labels: template?.metadata?.labels ?? {},
    containers: template?.spec?.containers ?? [],
  }
}

/** The variables a container gets: literal values, `<from fieldPath>` for a field of the pod,
 * `<secret name>` for a key of a Secret among `manifests` that its envFrom names. */
export function containerEnv(container: Container, manifests: Manifest[]): Map<string, string> {
  const env = new Map<string, string>()
  for (const source of container.envFrom ?? []) {
    const name = source.secretRef?.name ?? ''
    const secret = manifestOf(manifests, 'Secret', name)
    const data = { ...(secret['stringData'] as object), ...(secret['data'] as object) }
    for (const key of Object.keys(data)) env.set(key, `<secret ${name}>`)
  }
  for (const entry of container.env ?? []) {
    const field = entry.valueFrom?.fieldRef?.fieldPath
    env.set(entry.name, field === undefined ? (entry.value ?? '') : `<from ${field}>`)
  }
  return env
}

/** Whether every label a selector asks for is on the pod. */
export function selects(selector: Record<string, string>, labels: Record<string, string>): boolean {
  const wanted = Object.entries(selector)
  return wanted.length > 0 && wanted.every(([key, value]) => labels[key] === value)
}
