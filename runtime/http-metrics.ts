/** @module HTTP metrics of the ingress (prom-client): requests by operation, method and status,
 * latency histograms by operation, and request/response bytes. Kept in the ingress's own registry
 * and served with the actors' merged metrics on /metrics. */
import { Counter, Histogram, Registry } from 'prom-client'
import type { RequestSample } from '../protocol/actor.js'

export class HttpMetrics {
  readonly registry = new Registry()
  private readonly requests: Counter<'operation' | 'method' | 'status'>
  private readonly duration: Histogram<'operation'>
  private readonly requestBytes: Counter<'operation'>
  private readonly responseBytes: Counter<'operation'>

  constructor() {
    const registers = [this.registry]
    this.requests = new Counter({
      name: 'svc_http_requests_total',
      help: 'HTTP requests by S3 operation, method and status',
      labelNames: ['operation', 'method', 'status'],
      registers,
    })
    this.duration = new Histogram({
      name: 'svc_http_request_duration_seconds',
      help: 'Time from request to the end of the response',
      labelNames: ['operation'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60],
      registers,
    })
    this.requestBytes = new Counter({
      name: 'svc_http_request_bytes_total',
      help: 'Request body bytes announced by clients',
      labelNames: ['operation'],
      registers,
    })
    this.responseBytes = new Counter({
      name: 'svc_http_response_bytes_total',
      help: 'Response body bytes sent',
      labelNames: ['operation'],
      registers,
    })
  }

  observe(sample: RequestSample): void {
    const { operation } = sample
    this.requests.inc({ operation, method: sample.method, status: String(sample.status) })
    this.duration.observe({ operation }, sample.seconds)
    if (sample.requestBytes > 0) this.requestBytes.inc({ operation }, sample.requestBytes)
    if (sample.responseBytes > 0) this.responseBytes.inc({ operation }, sample.responseBytes)
  }
}
