/** @module A peer's clock offset as NTP estimates it (RFC 5905, its clock filter): only from an
 * answer to our own call, whose round trip bounds when the peer read its clock. The peer's clock
 * read `wallMs` somewhere between our send and our receipt, so its offset is the midpoint's, give
 * or take half the round trip. A sample whose round trip is long says little (a process paused
 * between the two ends, a busy thread, a slow network) and is discarded; of the last few, the one
 * with the shortest round trip is believed. A one-way message (a request a peer sent us) has no
 * bound at all: how long it waited in the sender's queues, or in a paused sender, is unknown, so
 * it is not a sample. */

/** Samples with a longer round trip are discarded: half of it is the sample's error. */
export const SAMPLE_ROUND_TRIP_MAX_MS = 200
/** Samples kept per peer; the one with the shortest round trip makes the estimate (NTP's 8). */
export const SAMPLES_MAX = 8

export interface ClockSample {
  offsetMs: number
  roundTripMs: number
}

/** The sample of one answer: sent at `sentAtMs` and received at `receivedAtMs` by our clock,
 * carrying the peer's `wallMs`. Null when the round trip is too long to tell. */
export function clockSample(
  sentAtMs: number,
  receivedAtMs: number,
  wallMs: number,
): ClockSample | null {
  const roundTripMs = receivedAtMs - sentAtMs
  if (roundTripMs < 0 || roundTripMs > SAMPLE_ROUND_TRIP_MAX_MS) return null
  return { offsetMs: wallMs - (sentAtMs + receivedAtMs) / 2, roundTripMs }
}

/** Adds `sample` to the last samples (at most SAMPLES_MAX, oldest out) and answers the skew they
 * show: the best sample's offset less its error, which the peer's clock is off ours at least. */
export function addSample(samples: ClockSample[], sample: ClockSample): number {
  samples.push(sample)
  if (samples.length > SAMPLES_MAX) samples.shift()
  let best = sample
  for (const other of samples) if (other.roundTripMs < best.roundTripMs) best = other
  return Math.max(0, Math.abs(best.offsetMs) - best.roundTripMs / 2)
}
