/** @module The node a console is served by, as its Cluster page shows it: which node, its mode
 * and version, how long it has run, and its data volume. A single node has no cluster to show
 * and shows this; a cluster node shows it beside the cluster's view. */
import { readFileSync } from 'node:fs'
import type { Mesh, VolumeStatus } from '../../protocol/actor.js'

export interface NodeSummary {
  id: string
  mode: string
  version: string
  uptime_seconds: number
  /** Null on a gateway, which has no data volume, or when it cannot be looked at. */
  volume: { size_bytes: number; free_bytes: number; full: boolean } | null
}

/** package.json's version: what svc_build_info reports. */
const VERSION = ((): string => {
  try {
    const text = readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')
    const parsed = JSON.parse(text) as { version?: unknown }
    return typeof parsed.version === 'string' ? parsed.version : 'unknown'
  } catch {
    return 'unknown'
  }
})()

function volumeJson(status: VolumeStatus): NodeSummary['volume'] {
  return { size_bytes: status.sizeBytes, free_bytes: status.freeBytes, full: status.full }
}

export async function nodeSummary(mesh: Mesh): Promise<NodeSummary> {
  const mode = mesh.config['SVC_MODE'] ?? 'single'
  const volume = mode === 'gateway' ? null : await mesh.volumeStatus().then(volumeJson, () => null)
  return {
    id: mesh.config['SVC_NODE_ID'] ?? 'single node',
    mode,
    version: VERSION,
    uptime_seconds: Math.round(process.uptime()),
    volume,
  }
}
