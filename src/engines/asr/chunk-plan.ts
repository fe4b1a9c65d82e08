/**
 * Where the next CTC chunk runs, for audio that is encoded piece by piece — a realtime turn while it is
 * spoken (realtime/chunked-turn.ts) and a long upload window by window (frames-walk.ts). A chunk runs the
 * model on [left context | new audio | lookahead] and keeps the output frames of its new audio only, so the
 * kept frames of successive chunks join into one CTC path: the whole audio's, wherever the model's receptive
 * field fits inside the context, and no audio is decoded twice but the context itself.
 *
 * All positions are samples from the audio's start; `cursor` is where the frames kept so far end (a multiple
 * of the hop, since frame i starts at sample i · hop).
 */

export interface ChunkGeometry {
  /** Samples per output frame. */
  hop: number;
  /** Context re-read before the new audio (a multiple of the hop). */
  left: number;
  /** Audio read ahead of the new audio, whose frames the next chunk keeps. */
  right: number;
  /** The most audio one model run takes (the model's window). */
  maxRun: number;
  /** Shorter audio produces no output frame. */
  minSamples: number;
}

export interface ChunkRun {
  /** Audio the run reads: [from, to). */
  from: number;
  to: number;
  /** Output frames of the run to skip (they cover the left context) … */
  skip: number;
  /** … and to keep (null: every frame to the run's end; the audio's last chunk). */
  take: number | null;
}

/** New audio of a chunk that is not the last, so that context + new audio + lookahead fit one model run. */
export function largestStep(g: ChunkGeometry): number {
  return Math.max(g.hop, Math.floor((g.maxRun - g.left - g.right) / g.hop) * g.hop);
}

/**
 * The next chunk once `available` samples are held: a chunk of `step` new audio (at most `largestStep`) when
 * that much and its lookahead have arrived, the rest of the audio in one last chunk once it has ended (if it
 * fits one run), or null (wait for more, or nothing left to encode).
 */
export function nextChunk(g: ChunkGeometry, cursor: number, available: number, ended: boolean, step: number): ChunkRun | null {
  if (cursor >= available || available < g.minSamples) return null;
  const from = Math.max(0, cursor - g.left);
  if (ended && available - from <= g.maxRun) return { from, to: available, skip: (cursor - from) / g.hop, take: null };
  const size = Math.min(Math.max(g.hop, Math.floor(step / g.hop) * g.hop), largestStep(g));
  if (cursor + size + g.right > available)
    return ended ? { from, to: Math.min(available, cursor + size + g.right), skip: (cursor - from) / g.hop, take: size / g.hop } : null;
  return { from, to: cursor + size + g.right, skip: (cursor - from) / g.hop, take: size / g.hop };
}
