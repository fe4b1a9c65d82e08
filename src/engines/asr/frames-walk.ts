/**
 * The CTC runner's walk over long audio (an upload, arriving window by window): chunks of at most one model
 * window, each re-reading `left` of context and reading `right` ahead, whose kept frames join into the
 * audio's CTC path (chunk-plan.ts). It holds about one window of audio, and decodes each sample about once:
 * (window + left + right) / window of the model time of plain back-to-back windows (1.07× for 30 s windows
 * with 1 s on each side), where the earlier walk re-decoded up to 6 s after each cut.
 *
 * Silence: a chunk whose new audio and lookahead are all below the energy floor (digital silence, a muted
 * line) is not run; it has no frames, so no words. That is the case that pays — an hour of silence costs no
 * model time — and it needs no VAD model, which costs ≈ 4 % of a real-size model's time over speech.
 */
import { largestStep, nextChunk, type ChunkGeometry } from './chunk-plan.js';
import { SampleBuffer } from './streamed-audio.js';

export interface PathPiece {
  /** Argmax class of each kept frame. */
  ids: Int32Array;
  /** The index of the first of them in the whole audio. */
  firstFrame: number;
  /** The blank's class. */
  blank: number;
}

export interface FramesWalkOptions {
  geometry: ChunkGeometry;
  /** Runs the model on `samples`: the argmax classes of output frames [skip, skip + take) (null: to the end). */
  frames(samples: Float32Array, skip: number, take: number | null): Promise<{ ids: Int32Array; blank: number }>;
  /** Whether `samples` hold nothing worth a model run. */
  silent(samples: Float32Array): boolean;
  /** Awaited before each chunk (cancellation). */
  checkpoint(): Promise<void>;
}

export async function* framesWalk(input: AsyncIterable<Float32Array>, walk: FramesWalkOptions): AsyncGenerator<PathPiece> {
  const g = walk.geometry;
  const step = largestStep(g);
  const audio = new SampleBuffer();
  let cursor = 0;

  async function* run(ended: boolean): AsyncGenerator<PathPiece> {
    for (let chunk = nextChunk(g, cursor, audio.end, ended, step); chunk; chunk = nextChunk(g, cursor, audio.end, ended, step)) {
      await walk.checkpoint();
      const samples = audio.copy(chunk.from, chunk.to).samples;
      const kept = chunk.take === null ? chunk.to - cursor : chunk.take * g.hop;
      if (walk.silent(samples.subarray(cursor - chunk.from))) {
        // Nothing to hear: the frames are skipped (the path has a gap there, as blanks would leave).
        cursor = chunk.take === null ? chunk.to : cursor + kept;
      } else {
        const { ids, blank } = await walk.frames(samples, chunk.skip, chunk.take);
        if (ids.length) yield { ids, firstFrame: cursor / g.hop, blank };
        // A chunk too short for a frame (the audio's last few ms) ends the walk; any other moves on.
        if (ids.length === 0 && chunk.take === null) return;
        cursor += ids.length ? ids.length * g.hop : kept;
      }
      audio.dropBefore(cursor - g.left);
      if (chunk.take === null) return;
    }
  }

  for await (const window of input) {
    audio.append(window);
    yield* run(false);
  }
  yield* run(true);
}
