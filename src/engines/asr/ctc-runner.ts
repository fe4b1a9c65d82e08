/**
 * The CTC speech-recognition runner (layouts in ctc-models.ts). Methods:
 * - `transcribe({ samples })`, or `transcribe({})` with the job's streamed input (an upload decoded window by
 *   window): segments with word times from CTC frame indices. Audio longer than one model window
 *   (`maxChunkSeconds`) is walked in chunks that re-read `contextSeconds` on either side and keep the frames
 *   of their own audio (frames-walk.ts), so the chunks join into the whole audio's CTC path; stretches of
 *   digital silence a whole chunk long are not run.
 * - `frames({ samples, skip, take })`: the argmax classes of some output frames of one run — a chunk of a
 *   realtime turn (realtime/chunked-turn.ts), joined on the main thread.
 * - `stream({ samples, state, final })`, for models whose info says `stateful` (convolutional NeMo models,
 *   ctc-stream.ts): encodes the audio after what `state` has seen (null: a new turn) and returns the argmax
 *   classes of the frames now complete (`firstFrame` on), the blank and the next state — plain typed arrays
 *   the caller keeps and sends with the next piece, to any replica. `final` ends the turn: every frame left.
 */
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { RunnerContext, RunnerFactory } from '../runner.js';
import { UnknownMethodError } from '../runner.js';
import { dbfsToRms, DEFAULT_GATE_FLOOR_DBFS, rms, VAD_WINDOW } from '../vad/silero-batch.js';
import { Segmenter, argmaxFrames, type Segment } from './ctc-decode.js';
import { CTC_SAMPLE_RATE, loadNemo, loadWav2vec2, parseOptions } from './ctc-models.js';
import { oneWindow } from './streamed-audio.js';
import { framesWalk } from './frames-walk.js';
import { PathWords } from './path-words.js';

export { CTC_SAMPLE_RATE };

const TranscribeInput = z.object({ samples: z.instanceof(Float32Array) });
/** One chunk of a realtime turn: its audio (context included) and which of its output frames to return. */
const FramesInput = z.object({ samples: z.instanceof(Float32Array), skip: z.number().int().min(0), take: z.number().int().min(0).nullable() });
/** One piece of a stateful stream: its new audio, the state the previous piece returned (null: first). */
const StreamInput = z.object({ samples: z.instanceof(Float32Array), state: z.unknown().nullable(), final: z.boolean() });
/** The windows of a streamed input. */
const InputWindow = z.instanceof(Float32Array);

/** Every 512-sample window below the energy floor: digital silence, a muted line — nothing to transcribe. */
function isSilent(samples: Float32Array, floorRms: number): boolean {
  for (let start = 0; start < samples.length; start += VAD_WINDOW) {
    if (rms(samples, start, Math.min(samples.length, start + VAD_WINDOW)) > floorRms) return false;
  }
  return true;
}

async function* checkedWindows(input: AsyncIterable<unknown>): AsyncGenerator<Float32Array> {
  for await (const window of input) yield InputWindow.parse(window);
}

export const createCtcRunner: RunnerFactory = async ({ entry, dir, intraOpThreads, interOpThreads }) => {
  const options = parseOptions(entry.engine, entry.options);
  if (!fs.existsSync(dir)) throw new Error(`The CTC model directory does not exist: ${dir}`);
  const sessionOptions = { intraOpThreads, interOpThreads };
  const model = entry.engine === 'ctc-nemo' ? await loadNemo(dir, options, sessionOptions) : await loadWav2vec2(dir, options, sessionOptions);
  const segmentOptions = { minPauseSeconds: options.minPauseSeconds, maxSegmentSeconds: options.maxSegmentSeconds };

  /**
   * The argmax class of output frames [skip, skip + take) (take null: to the last) of one chunk of a realtime
   * turn, and the blank's id: what the main thread needs to join chunks into the turn's CTC path.
   */
  async function chunkFrames(samples: Float32Array, skip: number, take: number | null): Promise<{ ids: Int32Array; frames: number; blank: number }> {
    if (samples.length < model.minSamples) return { ids: new Int32Array(0), frames: 0, blank: model.blank };
    const { data, frames, vocab } = await model.scores(samples);
    const end = take === null ? frames : Math.min(frames, skip + take);
    return { ids: argmaxFrames(data, vocab, Math.min(skip, end), end), frames, blank: model.blank >= 0 ? model.blank : vocab - 1 };
  }

  const hop = Math.round(model.frameSeconds * CTC_SAMPLE_RATE);
  const context = Math.round((options.contextSeconds * CTC_SAMPLE_RATE) / hop) * hop;
  const geometry = {
    hop,
    left: context,
    right: Math.max(context, 2 * hop),
    maxRun: Math.round(options.maxChunkSeconds * CTC_SAMPLE_RATE),
    minSamples: model.minSamples,
  };
  const floorRms = dbfsToRms(DEFAULT_GATE_FLOOR_DBFS);

  async function* transcribe(input: AsyncIterable<Float32Array>, ctx: RunnerContext): AsyncGenerator<Segment> {
    const path = framesWalk(input, {
      geometry,
      frames: (samples, skip, take) => chunkFrames(samples, skip, take),
      silent: (samples) => isSilent(samples, floorRms),
      checkpoint: () => ctx.checkpoint(),
    });
    // Words close as later frames come; segments close as later words come (both give the whole audio's).
    const words = new PathWords(model.pieces, { frameSeconds: model.frameSeconds, windowSeconds: model.windowSeconds }, options.minPauseSeconds);
    const segmenter = new Segmenter(segmentOptions);
    for await (const piece of path) yield* segmenter.push(words.push(piece));
    yield* segmenter.push(words.flush());
    yield* segmenter.flush();
  }

  return {
    info: () => ({
      engine: entry.engine,
      sampleRate: CTC_SAMPLE_RATE,
      frameSeconds: model.frameSeconds,
      windowSeconds: model.windowSeconds,
      minSamples: model.minSamples,
      minPauseSeconds: options.minPauseSeconds,
      maxChunkSeconds: options.maxChunkSeconds,
      streaming: options.streaming,
      pieces: model.pieces,
      file: path.basename(model.loaded.file),
      ...model.info,
    }),
    warmup: async () => {
      // A run as long as the longest one to come grows onnxruntime's memory arena once, at start, rather
      // than in the first long request (a first 10 s request took 2.3 s instead of 1.2 s at real size).
      const samples = new Float32Array(Math.round((options.warmupSeconds ?? options.maxChunkSeconds) * CTC_SAMPLE_RATE));
      for (let i = 0; i < samples.length; i++) samples[i] = Math.sin(i / 7) * 0.1;
      await chunkFrames(samples, 0, null);
      // A realtime turn's largest step and its final, so the step graph's arena is grown before the first turn.
      if (model.stream) await model.stream.step(samples.subarray(0, Math.round(options.streaming.chunkSeconds * CTC_SAMPLE_RATE)), null, true);
    },
    call(method, input, ctx) {
      if (method === 'frames') {
        const { samples, skip, take } = FramesInput.parse(input);
        return chunkFrames(samples, skip, take);
      }
      if (method === 'stream') {
        const { samples, state, final } = StreamInput.parse(input);
        if (!model.stream)
          throw new Error(`This ${entry.engine} model does not stream statefully (${String(model.info.statefulRefusal ?? 'not a convolutional NeMo model')})`);
        return model.stream.step(samples, state === null ? null : model.stream.parseState(state), final);
      }
      if (method !== 'transcribe') throw new UnknownMethodError(entry.engine, method);
      return transcribe(ctx.input ? checkedWindows(ctx.input) : oneWindow(TranscribeInput.parse(input).samples), ctx);
    },
    async close() {
      await model.loaded.release();
      await model.stream?.release();
    },
  };
};
