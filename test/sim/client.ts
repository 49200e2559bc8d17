/** @module The client model: S3-level operations (put, overwrite, delete, versioned put,
 * multipart, list, get: a first look, then for a larger object the read with a stream, as the
 * ingress makes it) sent to the coordinator of a random node, as the HTTP ingress sends them,
 * each recorded in the history with its answer. Every value written is unique in the run and its
 * bytes begin with its number, so a read says which write it saw; the MD5 of every value is kept
 * to check that the bytes came back whole. */
import { createHash } from 'node:crypto'
import type { Result } from '../../protocol/errors.js'
import type {
  CoordinatorMsg,
  GetResult,
  MarkerResult,
  PutResult,
  UploadCreated,
} from '../../protocol/messages.js'
import type { ListPage } from '../../protocol/objects.js'
import { memoryStream } from '../support/fake-context.js'
import type { Op, OpKind } from './history.js'
import type { SimRandom } from './random.js'
import type { Owner, Scheduler } from './scheduler.js'
import type { SimNode } from './sim-node.js'

export const PLAIN_BUCKET = 'sim-plain'
export const VERSIONED_BUCKET = 'sim-versioned'
/** A bucket created without versioning whose versioning is Enabled, then Suspended, while the
 * clients run: objects written before versioning, versions written while Enabled and `null`
 * versions written while Suspended live side by side. */
export const SUSPENDED_BUCKET = 'sim-suspended'
export const SIM_BUCKETS = [PLAIN_BUCKET, VERSIONED_BUCKET, SUSPENDED_BUCKET] as const
export const SIM_KEYS = ['a', 'b', 'c/d', 'e', 'f'] as const
/** A body this large is kept as a blob file rather than inline, and travels on a stream. */
const LARGE_BYTES = 100_000
/** S3's smallest part but the last. */
const PART_BYTES_MIN = 5 * 1024 * 1024
/** How long a client waits for any answer, as an S3 client's timeout. */
export const OP_MS = 30_000
const HTTP = { contentType: 'application/octet-stream' }

type Distribute<T> = T extends unknown ? Omit<T, 'requestId' | 'deadlineMs'> : never
type Body = Distribute<CoordinatorMsg>

/** Values written so far: MD5 of their bytes, by number. */
export class Values {
  private next = 1
  readonly md5 = new Map<number, string>()
  /** Values by ETag, as a listing shows them (a single-part object's is the MD5 of its bytes, a
   * multipart object's comes with its completion). */
  readonly etags = new Map<string, number>()

  /** A new value of `size` bytes (at least its header). */
  make(size: number): { value: number; bytes: Uint8Array } {
    const value = this.next++
    const bytes = valueBytes(value, size)
    const md5 = md5Hex(bytes)
    this.md5.set(value, md5)
    this.etags.set(`"${md5}"`, value)
    return { value, bytes }
  }

  /** Records a value made of parts (a multipart object), and its ETag: the MD5 of the parts'
   * MD5s, with their count. */
  record(value: number, parts: readonly Uint8Array[]): void {
    this.md5.set(value, md5Hex(Buffer.concat(parts)))
    const digests = Buffer.concat(parts.map((part) => createHash('md5').update(part).digest()))
    this.etags.set(`"${md5Hex(digests)}-${parts.length}"`, value)
  }

  reserve(): number {
    return this.next++
  }

  /** The value `bytes` hold, or a description of what is wrong with them. */
  identify(bytes: Uint8Array): { value: number } | { problem: string } {
    const head = Buffer.from(bytes.subarray(0, 24)).toString('latin1')
    const match = /^v(\d+)\|/.exec(head)
    if (match === null) return { problem: `bytes that no write produced (${head.slice(0, 12)}…)` }
    const value = Number(match[1])
    const expected = this.md5.get(value)
    if (expected === undefined) return { problem: `value ${value}, which was never written` }
    if (md5Hex(bytes) !== expected) return { problem: `value ${value} with wrong bytes` }
    return { value }
  }
}

export function valueBytes(value: number, size: number): Uint8Array {
  const header = Buffer.from(`v${value}|`, 'latin1')
  const bytes = new Uint8Array(Math.max(size, header.length))
  for (let index = 0; index < bytes.length; index++) bytes[index] = (index * 31 + value) & 0xff
  bytes.set(header, 0)
  return bytes
}

function md5Hex(bytes: Uint8Array): string {
  return createHash('md5').update(bytes).digest('hex')
}

export interface ClientWorld {
  scheduler: Scheduler
  nodes: SimNode[]
  values: Values
  history: Op[]
  /** Reads that returned wrong bytes or stalled: problems the history cannot show. */
  problems: string[]
}

export class SimClient {
  private readonly owner: Owner = { alive: true }
  private opCount = 0

  constructor(
    readonly id: number,
    private readonly world: ClientWorld,
    private readonly random: SimRandom,
  ) {}

  /** Runs random operations until `untilMs` (virtual) or `opsMax` of them. */
  async run(untilMs: number, opsMax: number): Promise<void> {
    while (this.world.scheduler.nowMs < untilMs && this.opCount < opsMax) {
      await this.sleep(this.random.float() * 50)
      await this.randomOp()
    }
  }

  /** Sends one request outside the history (setting up the run). */
  control<T>(node: SimNode, body: { kind: string }): Promise<Result<T>> {
    return this.ask<T>(node, body as Body)
  }

  /** Reads `key` of `bucket` through `node`, recorded like any read. */
  read(node: SimNode, bucket: string, key: string): Promise<void> {
    return this.get(node, bucket, key)
  }

  async list(node: SimNode, bucket: string): Promise<void> {
    const op = this.begin(node, 'list', bucket, '')
    const answer = await this.ask<ListPage>(node, {
      kind: 'object.list',
      bucket,
      prefix: '',
      delimiter: '',
      after: '',
      maxKeys: 1000,
    })
    if (!answer.ok) return this.end(op, answer)
    const listed: Record<string, number> = {}
    const { keys, etags } = answer.value.objects
    keys.forEach((key, index) => {
      const value = this.world.values.etags.get(etags[index] ?? '')
      if (value === undefined)
        this.world.problems.push(`list #${op.id} shows ${key} with an unknown ETag`)
      else listed[key] = value
    })
    op.listed = listed
    this.end(op, answer)
  }

  private async randomOp(): Promise<void> {
    const node = this.random.pick(this.world.nodes)
    const which = this.random.float()
    const bucket = which < 0.2 ? VERSIONED_BUCKET : which < 0.45 ? SUSPENDED_BUCKET : PLAIN_BUCKET
    const key = this.random.pick(SIM_KEYS)
    const roll = this.random.float()
    if (roll < 0.35) return this.put(node, bucket, key)
    if (roll < 0.5) return this.delete(node, bucket, key)
    if (roll < 0.85) return this.get(node, bucket, key)
    if (roll < 0.93) return this.list(node, bucket)
    return this.multipart(bucket, key)
  }

  private async put(node: SimNode, bucket: string, key: string): Promise<void> {
    const size = this.random.chance(0.15) ? LARGE_BYTES : this.random.between(16, 300)
    const { value, bytes } = this.world.values.make(size)
    const op = this.begin(node, 'put', bucket, key, value)
    const answer = await this.ask<PutResult>(node, {
      kind: 'object.put',
      bucket,
      key,
      http: HTTP,
      userMeta: {},
      expect: {},
      ...this.bodyOf(bytes),
    })
    this.end(op, answer)
  }

  private async delete(node: SimNode, bucket: string, key: string): Promise<void> {
    const op = this.begin(node, 'delete', bucket, key, null)
    this.end(op, await this.ask(node, { kind: 'object.delete', bucket, key }))
  }

  /** GET as the ingress sends it (http/s3/objects.ts): a first look that takes a small object's
   * bytes in its answer, then, for a larger one, the read with a stream; a read that met a corrupt
   * copy before any byte came is made once more, as the ingress does. */
  private async get(node: SimNode, bucket: string, key: string): Promise<void> {
    const op = this.begin(node, 'get', bucket, key)
    let read = await this.readOnce(node, op, bucket, key, true)
    if (read === 'again') read = await this.readOnce(node, op, bucket, key, false)
    if (read === 'again') throw new Error('a read without retry asked for another')
    if (read.ended) return
    const bytes = read.bytes
    const seen = this.world.values.identify(bytes)
    if ('problem' in seen) {
      this.world.problems.push(
        `get #${op.id} of ${bucket}/${key} through ${node.id}: ${seen.problem}`,
      )
      return this.end(op, { ok: false, code: 'internal', detail: seen.problem })
    }
    op.value = seen.value
    this.end(op, read.answer)
  }

  /** One read of a GET: its bytes and the answer they came with, or `ended` once the op is ended
   * (an error, no object or a marker); 'again' when `retry` and the copy read turned out corrupt
   * before any byte came. */
  private async readOnce(
    node: SimNode,
    op: Op,
    bucket: string,
    key: string,
    retry: boolean,
  ): Promise<
    'again' | { ended: true } | { ended: false; bytes: Uint8Array; answer: Result<unknown> }
  > {
    const done = { ended: true } as const
    const life = node.life
    const at = { kind: 'object.get' as const, bucket, key }
    const first = await this.ask<GetResult | MarkerResult>(node, { ...at, inline: true })
    const stream = memoryStream()
    const answer =
      !first.ok || 'marker' in first.value || first.value.body !== undefined
        ? first
        : await this.ask<GetResult | MarkerResult>(node, { ...at, stream: stream.handle })
    if (!answer.ok) {
      if (retry && answer !== first && answer.code === 'corrupt') return 'again'
      if (answer.code === 'no_such_key') {
        op.value = null
        this.end(op, { ok: true, value: null })
        return done
      }
      this.end(op, answer)
      return done
    }
    if ('marker' in answer.value) {
      op.value = null
      this.end(op, answer)
      return done
    }
    const inline = answer.value.body
    if (inline !== undefined) return { ended: false, bytes: inline, answer }
    stream.request(0, answer.value.info.size - 1)
    const got = await this.within(stream.received(), life)
    if (got === 'node died') {
      this.end(op, { ok: false, code: 'unavailable', detail: got })
      return done
    }
    if (got === 'stalled') {
      this.world.problems.push(`get #${op.id} through ${node.id}: the body never came`)
      this.end(op, { ok: false, code: 'timeout', detail: got })
      return done
    }
    if (!got.ended) {
      if (retry && got.code === 'corrupt' && got.bytes.length === 0) return 'again'
      this.end(op, { ok: false, code: got.code, detail: got.detail })
      return done
    }
    return { ended: false, bytes: got.bytes, answer }
  }

  /** CreateMultipartUpload, one or two parts (each through a random node), Complete through
   * another: recorded as one write that began with the create. */
  private async multipart(bucket: string, key: string): Promise<void> {
    const value = this.world.values.reserve()
    const two = this.random.chance(0.05)
    const first = valueBytes(value, two ? PART_BYTES_MIN : this.random.between(16, 300))
    const parts = two ? [first, valueBytes(value + 1_000_000, 64)] : [first]
    this.world.values.record(value, parts)
    const start = this.random.pick(this.world.nodes)
    const op = this.begin(start, 'multipart', bucket, key, value)
    const created = await this.ask<UploadCreated>(start, {
      kind: 'upload.create',
      bucket,
      key,
      http: HTTP,
      userMeta: {},
    })
    if (!created.ok) return this.end(op, created)
    const { uploadId } = created.value
    const completed: { partNumber: number; etag: string }[] = []
    for (const [index, part] of parts.entries()) {
      const node = this.random.pick(this.world.nodes)
      const answer = await this.ask<PutResult>(node, {
        kind: 'upload.part',
        bucket,
        key,
        uploadId,
        partNumber: index + 1,
        expect: {},
        ...this.bodyOf(part),
      })
      if (!answer.ok) return this.end(op, answer)
      completed.push({ partNumber: index + 1, etag: answer.value.etag })
    }
    const node = this.random.pick(this.world.nodes)
    op.node = `${op.node}>${node.id}`
    const answer = await this.ask<PutResult>(node, {
      kind: 'upload.complete',
      bucket,
      key,
      uploadId,
      parts: completed,
    })
    this.end(op, answer)
  }

  private bodyOf(bytes: Uint8Array): { body: Uint8Array } | { stream: object } {
    if (bytes.byteLength < LARGE_BYTES) return { body: bytes }
    const stream = memoryStream()
    stream.push(bytes)
    stream.end()
    return { stream: stream.handle }
  }

  private begin(node: SimNode, kind: OpKind, bucket: string, key: string, value?: number | null) {
    const op: Op = {
      id: this.world.history.length + 1,
      client: this.id,
      node: node.id,
      kind,
      bucket,
      key,
      ...(value === undefined ? {} : { value }),
      beganMs: this.world.scheduler.nowMs,
      endedMs: null,
      outcome: 'pending',
    }
    this.opCount++
    this.world.history.push(op)
    return op
  }

  private end(op: Op, answer: Result<unknown>): void {
    op.endedMs = this.world.scheduler.nowMs
    if (answer.ok) op.outcome = 'ok'
    else {
      op.outcome = 'failed'
      op.code = answer.code
    }
  }

  private ask<T>(node: SimNode, body: Body): Promise<Result<T>> {
    const msg = {
      ...body,
      requestId: `c${this.id}-${this.opCount}`,
      deadlineMs: node.now() + OP_MS,
    }
    return node.deliver('coordinator', msg as CoordinatorMsg, this.owner) as Promise<Result<T>>
  }

  private sleep(ms: number): Promise<void> {
    return this.world.scheduler.sleep(ms, this.owner)
  }

  /** Waits for `promise` until OP_MS, looking every second whether the node it reads from died
   * (its connection would break). */
  private within<T>(promise: Promise<T>, life: Owner): Promise<T | 'node died' | 'stalled'> {
    return new Promise((resolve) => {
      let done = false
      const finish = (outcome: T | 'node died' | 'stalled'): void => {
        if (!done) resolve(outcome)
        done = true
      }
      void promise.then(finish)
      let waited = 0
      const look = (): void => {
        if (done) return
        if (!life.alive) return finish('node died')
        if (waited >= OP_MS) return finish('stalled')
        waited += 1_000
        this.world.scheduler.after(1_000, look, this.owner)
      }
      look()
    })
  }
}
