/** @module The data volume's gauges for /metrics, from one look at it (runtime/data-volume.ts):
 * its size, its free space, and whether object writes are refused for lack of space. A fresh
 * registry per scrape, as for the node's other gauges. */
import { Gauge, Registry } from 'prom-client'
import type { VolumeStatus } from '../protocol/actor.js'

export async function volumeMetricsText(status: VolumeStatus): Promise<string> {
  const registry = new Registry()
  const registers = [registry]
  new Gauge({
    name: 'svc_data_volume_size_bytes',
    help: 'Size of the file system that holds the data directory',
    registers,
  }).set(status.sizeBytes)
  new Gauge({
    name: 'svc_data_volume_free_bytes',
    help: 'Free space on the file system that holds the data directory',
    registers,
  }).set(status.freeBytes)
  new Gauge({
    name: 'svc_data_volume_full',
    help: 'Whether object writes are refused for lack of space (507 InsufficientStorage)',
    registers,
  }).set(status.full ? 1 : 0)
  return registry.metrics()
}
