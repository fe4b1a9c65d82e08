/**
 * The VITS text-to-speech runner (engines `vits-hf`, `vits-sherpa`, `vits-piper`; see vits-layouts.ts for
 * the three export layouts). Method `synthesize` takes `{ text, speaker?, noiseScale?, lengthScale? }`
 * and streams one chunk per phrase (phrase-plan.ts), each `{ samples, sampleRate, text, characters }`,
 * as soon as it is synthesized, so the first audio leaves before the rest of the text is done. Method
 * `synthesizePhrase` takes one planned phrase `{ spoken, boundaryAfter, speaker?, noiseScale?, lengthScale? }`
 * and returns its `{ samples, sampleRate }`, the same samples `synthesize` gives for that phrase: the speech
 * route plans on the main thread and runs one short job per phrase, so no request holds a replica for a
 * whole text (`info().phraseSynthesis`). Samples are mono float32 at the model's own rate; resampling to
 * the API's rates happens downstream.
 *
 * Each phrase says its speech-text.ts form (digits as Bambara number words, punctuation as pauses) over the
 * voice's alphabet, which `info().alphabet` reports so the API can refuse unspeakable text up front; each
 * phrase but the last ends with the voice's word boundary, so the joined audio reads as one text.
 *
 * Runs inside a model worker (session.run blocks its thread); `ctx.checkpoint()` between phrases lets a
 * cancel stop the job. Every call runs batch 1, which is how every one of these exports is served.
 */
import path from 'node:path';
import { z } from 'zod';
import { createSession, ort, requireSignature } from '../onnx/session.js';
import { UnknownMethodError, type Runner, type RunnerContext, type RunnerFactory } from '../runner.js';
import { planPhrases, UnspeakableTextError } from './phrase-plan.js';
import { speechText } from './speech-text.js';
import { loadVitsLayout, VitsLayoutError, type VitsBinding, type VitsLayout } from './vits-layouts.js';

export interface SynthesizeInput {
  text: string;
  speaker?: number;
  noiseScale?: number;
  lengthScale?: number;
}

export interface SpeechChunk {
  samples: Float32Array;
  sampleRate: number;
  /** The normalised text this chunk speaks. */
  text: string;
  /** Input characters (code points) this chunk accounts for; over a whole job they add up to the input. */
  characters: number;
}

const VoiceSchema = z.object({
  speaker: z.number().int().min(0).optional(),
  noiseScale: z.number().positive().max(10).optional(),
  lengthScale: z.number().positive().max(10).optional(),
});
const InputSchema = VoiceSchema.extend({ text: z.string() });
/** One phrase of a plan (phrase-plan.ts); `text` and `index` may come along for logs and are not used. */
const PhraseSchema = VoiceSchema.extend({ spoken: z.string().min(1), boundaryAfter: z.boolean() });

export interface PhraseInput {
  spoken: string;
  boundaryAfter: boolean;
  speaker?: number;
  noiseScale?: number;
  lengthScale?: number;
}

interface Params {
  speaker: number;
  noiseScale: number;
  lengthScale: number;
  noiseScaleW: number;
}

function parseInput<S extends typeof InputSchema | typeof PhraseSchema>(
  schema: S,
  method: string,
  input: unknown,
  layout: VitsLayout,
): Params & Omit<z.infer<S>, keyof Params> {
  const parsed = schema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new TypeError(`Invalid ${method} input: ${issue.path.join('.') || 'input'}: ${issue.message}`);
  }
  const { speaker = 0, noiseScale, lengthScale, ...rest } = parsed.data;
  if (speaker >= layout.speakers) {
    throw new RangeError(
      `Speaker ${speaker} does not exist: this voice has ${layout.speakers} speaker${layout.speakers === 1 ? ' (0)' : `s (0–${layout.speakers - 1})`}`,
    );
  }
  // The HF export freezes its scales into the graph: the knobs are accepted and have no effect there (see info().controls).
  return {
    ...(rest as unknown as Omit<z.infer<S>, keyof Params>),
    speaker,
    noiseScale: noiseScale ?? layout.defaults.noiseScale,
    lengthScale: lengthScale ?? layout.defaults.lengthScale,
    noiseScaleW: layout.defaults.noiseScaleW,
  };
}

/** IEEE half → float, for exports whose waveform is float16. */
function halfToFloat(bits: Uint16Array): Float32Array {
  const out = new Float32Array(bits.length);
  for (let i = 0; i < bits.length; i++) {
    const h = bits[i]!;
    const sign = h & 0x8000 ? -1 : 1;
    const exp = (h >> 10) & 0x1f;
    const frac = h & 0x3ff;
    out[i] = sign * (exp === 0 ? frac * 2 ** -24 : exp === 31 ? (frac ? NaN : Infinity) : (1 + frac / 1024) * 2 ** (exp - 15));
  }
  return out;
}

export { UnspeakableTextError };

/**
 * The characters a voice speaks (spaces aside): the vocabulary's characters, and their capitals where the
 * layout's own lower-casing maps them to a spoken symbol. speech-text.ts checks requests against it.
 */
export function alphabetOf(layout: VitsLayout): string[] {
  const candidates = new Set<string>();
  for (const c of layout.characters) {
    candidates.add(c);
    const upper = c.toUpperCase();
    if ([...upper].length === 1) candidates.add(upper);
  }
  return [...candidates].filter((c) => !/\s/u.test(c) && layout.tokenize(c).symbols > 0).sort();
}

export const createVitsRunner: RunnerFactory = async ({ entry, dir, intraOpThreads, interOpThreads }) => {
  const layout = loadVitsLayout(entry.engine, dir, entry.options);
  const loaded = await createSession(layout.modelFile, { intraOpThreads, interOpThreads });
  const binding: VitsBinding = layout.bind(loaded.inputNames);
  requireSignature(loaded, binding.required, [binding.output]);
  const intTypes: Record<string, 'int64' | 'int32'> = {};
  for (const name of [binding.ids, binding.length?.name, binding.speaker]) {
    if (!name) continue;
    const type = loaded.inputTypes[name];
    if (type !== 'int64' && type !== 'int32') throw new VitsLayoutError(`${layout.modelFile}: input ${name} is ${type}; expected int64`);
    intTypes[name] = type;
  }

  const alphabet = alphabetOf(layout);
  const speakable = new Set(alphabet);

  const int = (name: string, values: number[], dims: number[]) =>
    intTypes[name] === 'int32'
      ? new ort.Tensor('int32', Int32Array.from(values), dims)
      : new ort.Tensor(
          'int64',
          BigInt64Array.from(values, (v) => BigInt(v)),
          dims,
        );
  const float = (values: number[]) => new ort.Tensor('float32', Float32Array.from(values), [values.length]);

  async function synthesizeIds(ids: number[], params: Params): Promise<Float32Array> {
    const feeds: Record<string, ort.Tensor> = { [binding.ids]: int(binding.ids, ids, [1, ids.length]) };
    if (binding.length?.kind === 'mask')
      feeds[binding.length.name] = int(
        binding.length.name,
        ids.map(() => 1),
        [1, ids.length],
      );
    if (binding.length?.kind === 'lengths') feeds[binding.length.name] = int(binding.length.name, [ids.length], [1]);
    if (binding.scales?.kind === 'separate') {
      feeds[binding.scales.noise] = float([params.noiseScale]);
      feeds[binding.scales.length] = float([params.lengthScale]);
      feeds[binding.scales.noiseW] = float([params.noiseScaleW]);
    } else if (binding.scales?.kind === 'packed') {
      feeds[binding.scales.name] = float([params.noiseScale, params.lengthScale, params.noiseScaleW]);
    }
    if (binding.speaker) feeds[binding.speaker] = int(binding.speaker, [params.speaker], [1]);
    const result = await loaded.run(feeds, [binding.output]);
    const tensor = result[binding.output]!;
    if (tensor.dims.slice(0, -1).some((d) => d !== 1))
      throw new Error(`${layout.modelFile}: output ${binding.output} has shape [${tensor.dims}]; expected one waveform`);
    // Copy: the chunk's buffer is transferred to the main thread whole.
    if (tensor.type === 'float32') return (tensor.data as Float32Array).slice();
    if (tensor.type === 'float16') return halfToFloat(tensor.data as unknown as Uint16Array);
    throw new Error(`${layout.modelFile}: output ${binding.output} is ${tensor.type}; expected float32`);
  }

  async function* synthesize(input: unknown, ctx: RunnerContext): AsyncGenerator<SpeechChunk> {
    // Invalid input fails on the first pull, like every other error of a streaming job.
    const { text, ...params } = parseInput(InputSchema, 'synthesize', input, layout);
    // Plan every chunk first (cheap) so characters of chunks with nothing to say are charged to a
    // neighbour that is spoken, and a text the voice cannot say at all fails before any audio.
    const planned = planPhrases(text, speakable);
    for (const chunk of planned) {
      await ctx.checkpoint();
      const samples = await speakPhrase(chunk, params);
      yield { samples, sampleRate: layout.sampleRate, text: chunk.text, characters: chunk.characters };
    }
  }

  /** One phrase of a plan; the space between it and the next is spoken at its end (`boundaryAfter`). */
  function speakPhrase(phrase: { spoken: string; boundaryAfter: boolean }, params: Params): Promise<Float32Array> {
    const { ids } = layout.tokenize(phrase.spoken, { boundaryAfter: phrase.boundaryAfter });
    return synthesizeIds(ids, params);
  }

  async function synthesizePhrase(input: unknown): Promise<{ samples: Float32Array; sampleRate: number }> {
    const { spoken, boundaryAfter, ...params } = parseInput(PhraseSchema, 'synthesizePhrase', input, layout);
    // The main thread planned with the alphabet info() reports; a phrase outside it is a caller's bug.
    const { unspeakable } = speechText(spoken, speakable);
    if (unspeakable.length) throw new UnspeakableTextError(unspeakable);
    return { samples: await speakPhrase({ spoken, boundaryAfter }, params), sampleRate: layout.sampleRate };
  }

  const defaults: Params = {
    speaker: 0,
    noiseScale: layout.defaults.noiseScale,
    lengthScale: layout.defaults.lengthScale,
    noiseScaleW: layout.defaults.noiseScaleW,
  };
  const runner: Runner = {
    info: () => ({
      engine: entry.engine,
      layout: entry.engine.slice('vits-'.length),
      model: path.basename(layout.modelFile),
      sampleRate: layout.sampleRate,
      speakers: layout.speakers,
      vocabularySize: layout.vocabularySize,
      // What the API checks a speech request against (speech-text.ts), before synthesis and charge.
      alphabet: alphabet.join(''),
      controls: layout.controls,
      // The speech route may run one job per phrase (synthesizePhrase) instead of one per text.
      phraseSynthesis: true,
    }),
    async warmup() {
      const tokens = layout.tokenize('aw ni ce');
      if (tokens.symbols) await synthesizeIds(tokens.ids, defaults);
    },
    call(method, input, ctx) {
      if (method === 'synthesizePhrase') return synthesizePhrase(input);
      if (method !== 'synthesize') return Promise.reject(new UnknownMethodError(entry.engine, method));
      return synthesize(input, ctx);
    },
    async close() {
      await loaded.release();
    },
  };
  return runner;
};
