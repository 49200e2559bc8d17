/** @module The simulation's one source of randomness: sfc32 seeded through splitmix32, so a seed
 * gives the same sequence on every machine and Node version (Math.random is never used). */

export class SimRandom {
  private a: number
  private b: number
  private c: number
  private d: number

  constructor(readonly seed: number) {
    let state = seed >>> 0
    const next = (): number => {
      state = (state + 0x9e3779b9) >>> 0
      let z = state
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0
      return (z ^ (z >>> 16)) >>> 0
    }
    this.a = next()
    this.b = next()
    this.c = next()
    this.d = next()
    for (let warm = 0; warm < 12; warm++) this.uint32()
  }

  uint32(): number {
    const t = (((this.a + this.b) >>> 0) + this.d) >>> 0
    this.d = (this.d + 1) >>> 0
    this.a = this.b ^ (this.b >>> 9)
    this.b = (this.c + (this.c << 3)) >>> 0
    this.c = ((this.c << 21) | (this.c >>> 11)) >>> 0
    this.c = (this.c + t) >>> 0
    return t
  }

  /** A float in [0, 1). */
  float(): number {
    return this.uint32() / 4294967296
  }

  /** An integer in [0, bound). */
  int(bound: number): number {
    return Math.floor(this.float() * bound)
  }

  /** An integer in [low, high]. */
  between(low: number, high: number): number {
    return low + this.int(high - low + 1)
  }

  chance(probability: number): boolean {
    return this.float() < probability
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from nothing')
    return items[this.int(items.length)] as T
  }

  bytes(length: number): Uint8Array {
    const out = new Uint8Array(length)
    for (let index = 0; index < length; index += 4) {
      let word = this.uint32()
      for (let byte = index; byte < Math.min(index + 4, length); byte++) {
        out[byte] = word & 0xff
        word >>>= 8
      }
    }
    return out
  }

  /** A generator of its own, for one part of the world, so that what one part draws does not
   * shift what another draws. */
  fork(label: number): SimRandom {
    return new SimRandom((this.seed * 31 + label * 0x9e3779b1) >>> 0)
  }
}
