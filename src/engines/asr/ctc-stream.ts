/**
 * Stateful streaming for convolutional NeMo CTC models (QuartzNet, Jasper): the model's graph is turned into a
 * step graph at load (onnx/conv-streaming.ts) and the log-mels are computed piece by piece
 * (nemo-features-stream.ts), so a realtime turn is encoded from its new audio only, carrying state, and the
 * frames of all steps are exactly those of one run over the whole turn — whatever the receptive field
 * (QuartzNet 15×5 reads ±40 s, which no chunk context could cover).
 *
 * The state goes back to the caller as plain typed arrays after each step (transferred, not copied, between
 * threads), so any replica can run a turn's next step. What a step costs is what the whole run would compute
 * for the new audio; the final step also computes every layer's pending frames up to the end (the end's
 * lookahead: for a short turn about the whole run).
 */
import fs from 'node:fs';
import { z } from 'zod';
import { convStreamGraph, STREAM_FINAL, STREAM_POSITION, type StreamCache } from '../onnx/conv-streaming.js';
import { createSession, ort, type LoadedSession, type SessionOptions } from '../onnx/session.js';
import { argmaxFrames } from './ctc-decode.js';
import { LogMelStream, logMelStreamRefusal } from './nemo-features-stream.js';
import type { NemoFeatureConfig } from './nemo-features.js';

/** A length the model can never reach: the mask keeps every frame while the turn's end is unknown. */
const UNKNOWN_LENGTH = 2n ** 40n;

export interface CtcStreamState {
  features: { tail: Float64Array; tailStart: number; last: number; seen: number; next: number };
  /** Feature frames given to the model so far, and output frames returned. */
  position: number;
  emitted: number;
  caches: Float32Array[];
}

export interface CtcStreamStep {
  /** Argmax class of output frames [firstFrame, firstFrame + ids.length). */
  ids: Int32Array;
  firstFrame: number;
  blank: number;
  state: CtcStreamState;
}

const StateSchema = z.object({
  features: z.object({
    tail: z.instanceof(Float64Array),
    tailStart: z.number().int(),
    last: z.number(),
    seen: z.number().int().min(0),
    next: z.number().int().min(0),
  }),
  position: z.number().int().min(0),
  emitted: z.number().int().min(0),
  caches: z.array(z.instanceof(Float32Array)),
});

export class CtcStream {
  private readonly features: LogMelStream;

  private constructor(
    readonly loaded: LoadedSession,
    private readonly caches: StreamCache[],
    private readonly usesLength: boolean,
    private readonly config: NemoFeatureConfig,
    private readonly subsampling: number,
    private readonly minSamples: number,
    private readonly blank: number,
    /** Audio an output frame reads ahead of itself (conv-streaming.ts): no frame comes out sooner. */
    readonly lookaheadSeconds: number,
  ) {
    this.features = new LogMelStream(config);
  }

  /** The streamer of a NeMo model file, or why this model cannot stream statefully. */
  static async load(
    file: string,
    model: { config: NemoFeatureConfig; subsampling: number; minSamples: number; blank: number },
    session: SessionOptions,
  ): Promise<CtcStream | { refusal: string }> {
    const { config } = model;
    const refusal = logMelStreamRefusal(config);
    if (refusal) return { refusal };
    const step = convStreamGraph(new Uint8Array(fs.readFileSync(file)), {
      audio: 'audio_signal',
      length: 'length',
      output: 'logprobs',
      channels: config.nMels,
    });
    if ('unsupported' in step) return { refusal: `the graph has ${step.unsupported}` };
    const loaded = await createSession(file, session, step.bytes);
    return new CtcStream(
      loaded,
      step.caches,
      step.usesLength,
      config,
      model.subsampling,
      model.minSamples,
      model.blank,
      (step.lookahead * config.hopLength) / config.sampleRate,
    );
  }

  initial(): CtcStreamState {
    const caches = this.caches.map((c) => new Float32Array(c.dims.reduce((a, b) => a * b, 1)));
    return { features: this.features.initial(), position: 0, emitted: 0, caches };
  }

  /** Checks a state that came from another thread: a state of another model is refused, not run. */
  parseState(value: unknown): CtcStreamState {
    const state = StateSchema.parse(value);
    if (state.caches.length !== this.caches.length)
      throw new Error(`The stream state has ${state.caches.length} caches; this model carries ${this.caches.length}`);
    state.caches.forEach((data, i) => {
      const c = this.caches[i]!;
      const perFrame = c.dims.reduce((a, d, axis) => (axis === c.axis ? a : a * d), 1);
      if (data.length % perFrame) throw new Error(`The stream state's cache ${i} does not fit this model`);
    });
    return state;
  }

  /** Encodes `samples` after the audio `state` has seen (null: a new stream); `final` ends the stream. */
  async step(samples: Float32Array, state: CtcStreamState | null, final: boolean): Promise<CtcStreamStep> {
    const from = state ?? this.initial();
    const piece = this.features.push(from.features, samples, final);
    const valid = piece.firstFrame + piece.frames;
    const { nMels, padTo } = this.config;
    // pad_to zero frames end the whole run's input (the mask leaves them zero): the final step adds them too.
    const frames = final && padTo > 0 ? piece.frames + Math.ceil(valid / padTo) * padTo - valid : piece.frames;
    const blank = this.blank;
    if (frames === 0) return { ids: new Int32Array(0), firstFrame: from.emitted, blank, state: { ...from, features: piece.state } };
    let audio = piece.data;
    if (frames > piece.frames) {
      audio = new Float32Array(nMels * frames);
      for (let m = 0; m < nMels; m++) audio.set(piece.data.subarray(m * piece.frames, (m + 1) * piece.frames), m * frames);
    }
    const feeds: Record<string, ort.Tensor> = {
      audio_signal: new ort.Tensor('float32', audio, [1, nMels, frames]),
      [STREAM_POSITION]: new ort.Tensor('int64', BigInt64Array.from([BigInt(from.position)]), []),
      [STREAM_FINAL]: new ort.Tensor('int64', BigInt64Array.from([final ? 1n : 0n]), [1]),
    };
    if (this.usesLength) feeds.length = new ort.Tensor('int64', BigInt64Array.from([final ? BigInt(valid) : UNKNOWN_LENGTH]), [1]);
    this.caches.forEach((c, i) => {
      const data = from.caches[i]!;
      const perFrame = c.dims.reduce((a, d, axis) => (axis === c.axis ? a : a * d), 1);
      feeds[c.input] = new ort.Tensor(
        'float32',
        data,
        c.dims.map((d, axis) => (axis === c.axis ? data.length / perFrame : d)),
      );
    });
    const out = await this.loaded.run(feeds);
    const logprobs = out.logprobs!;
    const [, count, vocab] = logprobs.dims as [number, number, number];
    // The whole run keeps the output frames that cover the audio (not pad_to's), and nothing from too short audio.
    const keep = !final ? count : piece.state.seen < this.minSamples ? 0 : Math.max(0, Math.min(count, Math.ceil(valid / this.subsampling) - from.emitted));
    const ids = argmaxFrames(logprobs.data as Float32Array, vocab, 0, keep);
    const caches = this.caches.map((c) => out[c.output]!.data as Float32Array);
    return { ids, firstFrame: from.emitted, blank, state: { features: piece.state, position: from.position + frames, emitted: from.emitted + count, caches } };
  }

  release(): Promise<void> {
    return this.loaded.release();
  }
}
