/** @module A writer of object attributes beside the clients: while the faults run, the tags of a
 * random key's current version are set through a random node, each time to a value of its own.
 * The replicas' digests then cover attribute changes (they must converge like the rest), and
 * after the calm a key whose last change was an acknowledged retag, with no write or retag of it
 * that failed, overlapped or came later, must carry exactly those tags: a retag that failed may
 * have taken effect at any later time, and a write makes a version of its own. */
import type { Result } from '../../protocol/errors.js'
import type { AttributesResult } from '../../protocol/messages.js'
import type { Tag } from '../../protocol/tagging.js'
import { SIM_BUCKETS, SIM_KEYS, type ClientWorld, type SimClient } from './client.js'
import { isWrite } from './history.js'
import type { SimRandom } from './random.js'
import { answerOf, type Trace } from './trace.js'

/** One change of a key's tags, as the writer saw it end. */
interface Retag {
  bucket: string
  key: string
  tags: Tag[]
  beganMs: number
  endedMs: number
  ok: boolean
}

/** Pause between two retags, at least and at most: a few dozen in the fault phase. */
const PAUSE_MS = [200, 1_500] as const

/** Sets tags until `untilMs`, one change at a time; returns every change with its outcome. */
export async function retagKeys(
  world: ClientWorld,
  writer: SimClient,
  random: SimRandom,
  trace: Trace,
  untilMs: number,
): Promise<Retag[]> {
  const { scheduler } = world
  const retags: Retag[] = []
  while (scheduler.nowMs < untilMs) {
    await scheduler.sleep(random.between(...PAUSE_MS))
    const node = random.pick(world.nodes)
    const bucket = random.pick(SIM_BUCKETS)
    const key = random.pick(SIM_KEYS)
    const tags = [{ key: 'retag', value: String(retags.length) }]
    const beganMs = scheduler.nowMs
    const answer = await writer.control(node, {
      kind: 'object.attributes.put',
      bucket,
      key,
      attributes: { tags },
    } as { kind: string })
    trace.add(
      scheduler.nowMs,
      node.id,
      `retag ${bucket}/${key} ${tags[0]?.value}: ${answerOf(answer)}`,
    )
    retags.push({ bucket, key, tags, beganMs, endedMs: scheduler.nowMs, ok: answer.ok })
  }
  return retags
}

/** After the calm: each key whose last change was an acknowledged retag, all else about it
 * settled before, reads those tags through every node. */
export async function retagsHold(
  world: ClientWorld,
  writer: SimClient,
  retags: readonly Retag[],
): Promise<string[]> {
  const problems: string[] = []
  for (const bucket of SIM_BUCKETS) {
    for (const key of SIM_KEYS) {
      const last = settledRetag(world, retags, bucket, key)
      if (last === null) continue
      for (const node of world.nodes) {
        const answer = await writer.control<AttributesResult>(node, {
          kind: 'object.attributes.get',
          bucket,
          key,
        } as { kind: string })
        const held = answer.ok ? JSON.stringify(answer.value.attributes.tags ?? []) : answer.code
        if (held !== JSON.stringify(last.tags)) {
          const wanted = JSON.stringify(last.tags)
          problems.push(
            `${bucket}/${key}: retag ${wanted} was its last change, ${node.id} reads ${held}`,
          )
        }
      }
    }
  }
  return problems
}

/** The key's last retag, when it was acknowledged and every other change of the key (writes and
 * retags) succeeded and ended before it began; otherwise null: nothing certain to check. */
function settledRetag(
  world: ClientWorld,
  retags: readonly Retag[],
  bucket: string,
  key: string,
): Retag | null {
  const mine = retags.filter((retag) => retag.bucket === bucket && retag.key === key)
  const last = mine.at(-1)
  if (last === undefined || !last.ok) return null
  const othersSettled = mine.every(
    (retag) => retag === last || (retag.ok && retag.endedMs < last.beganMs),
  )
  const writes = world.history.filter((op) => isWrite(op) && op.bucket === bucket && op.key === key)
  const writesSettled = writes.every(
    (op) => op.outcome === 'ok' && op.endedMs !== null && op.endedMs < last.beganMs,
  )
  return othersSettled && writesSettled ? last : null
}
