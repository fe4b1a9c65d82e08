/**
 * How evenly a reply's frames reached the simulated carrier, from their arrival times alone (no server clock).
 *
 * Cadence deviation (the jitter figure): a frame's delay is its arrival minus its place on an ideal 20 ms
 * cadence (arrival_i − 20 ms·i); its deviation is that delay minus the smallest delay of the playback — the
 * packet delay variation of ITU-T Y.1540 / RFC 5481 with the best frame as reference. So 0 is a frame exactly
 * on the cadence the best frame set, and a gap in the audio shows on every frame after it (the caller heard
 * it late), where an inter-arrival measure would count it once. Frames the pacer sends ahead of real time as
 * the carrier's cushion (its lead) are left out: they are early on purpose, and would make every later frame
 * look late by the lead.
 *
 * Playout gaps: a model of the carrier's jitter buffer (each frame plays 20 ms after the one before, or when it
 * arrives if the buffer ran dry): each time it runs dry mid-reply the caller hears a gap. A gap is synthesis
 * falling behind (the next phrase's audio was not ready when the last one had played), not pacing: the pacer
 * starts a fresh clock for a stream that ran dry. So the pacer's own jitter is the cadence deviation within
 * each run of frames between gaps (`pacingDeviations`), each run with its own lead frame.
 */

export const FRAME_MS = 20;

/**
 * Frames of a playback that leave at once, ahead of real time: Kuma's FramePacer is built with a 2 ms lead
 * (src/telephony/telephony-service.ts), which rounds up to one whole 20 ms frame sent early.
 */
export const PACER_LEAD_FRAMES = 1;

/** Each frame's deviation (ms, ≥ 0) from the best-aligned 20 ms cadence, lead frames left out. */
export function cadenceDeviations(arrivals: readonly number[], leadFrames = PACER_LEAD_FRAMES, frameMs = FRAME_MS): number[] {
  if (arrivals.length <= leadFrames) return [];
  const delays: number[] = [];
  for (let i = leadFrames; i < arrivals.length; i++) delays.push(arrivals[i]! - frameMs * i);
  let best = Infinity;
  for (const d of delays) if (d < best) best = d;
  return delays.map((d) => d - best);
}

/** Cadence deviations within each run of frames between playout gaps (the pacer's own jitter). */
export function pacingDeviations(arrivals: readonly number[], leadFrames = PACER_LEAD_FRAMES, frameMs = FRAME_MS): number[] {
  const deviations: number[] = [];
  let runStart = 0;
  let freeAt = Number.NaN;
  arrivals.forEach((at, i) => {
    if (!Number.isNaN(freeAt) && at > freeAt) {
      deviations.push(...cadenceDeviations(arrivals.slice(runStart, i), leadFrames, frameMs));
      runStart = i;
    }
    freeAt = (Number.isNaN(freeAt) ? at : Math.max(at, freeAt)) + frameMs;
  });
  deviations.push(...cadenceDeviations(arrivals.slice(runStart), leadFrames, frameMs));
  return deviations;
}

/** Times the modelled playout buffer ran dry before the reply's last frame, and the silence that made (ms). */
export function playoutGaps(arrivals: readonly number[], frameMs = FRAME_MS): { count: number; totalMs: number } {
  let count = 0;
  let totalMs = 0;
  let freeAt = Number.NaN;
  for (const at of arrivals) {
    if (!Number.isNaN(freeAt) && at > freeAt) {
      count++;
      totalMs += at - freeAt;
    }
    freeAt = (Number.isNaN(freeAt) ? at : Math.max(at, freeAt)) + frameMs;
  }
  return { count, totalMs };
}
