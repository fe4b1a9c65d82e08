/**
 * The Whisper speech-recognition runner for the Hugging Face optimum export: `onnx/encoder_model.onnx` +
 * `onnx/decoder_model_merged.onnx` (or the older `decoder_model.onnx` + `decoder_with_past_model.onnx`), in
 * the variant `options.variant` names (`''`, `_fp16`, `_quantized`, ...), with `config.json`,
 * `generation_config.json`, `tokenizer.json` and `preprocessor_config.json`.
 *
 * Method `transcribe({ samples, temperature?, task?, language?, seed? })` streams segments
 * `{ start, end, text, words: [] }` in absolute seconds, like the CTC runner (no words: Whisper times words
 * by aligning cross-attention weights, which the optimum export does not output). Audio longer than 30 s is cut
 * at silences found by Silero VAD (the CTC runner's chunk plan); within each piece, 30 s windows run one
 * after another and the next window starts where OpenAI's seek rule says. The audio may also come as a
 * stream of windows (the job's streamed input, `samples` left out): it is cut as it arrives
 * (streamed-chunks.ts), into the same pieces the whole array would give. Per window: log-mel features
 * (80 or 128 bins), the encoder once, then the decoder over its KV cache with Whisper's timestamp rules,
 * greedy at temperature 0 or sampled (seeded) above. Method `decode({ samples, ... })` returns the raw
 * tokens of one window, for diagnostics and contract tests.
 */
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { RunnerContext, RunnerFactory } from '../runner.js';
import { UnknownMethodError } from '../runner.js';
import { createSession, requireSignature, type LoadedSession } from '../onnx/session.js';
import { TextTokenizer } from '../text/tokenizer.js';
import { SileroVad } from '../vad/silero-vad.js';
import type { Segment } from './ctc-decode.js';
import { oneWindow, plannedChunks } from './streamed-chunks.js';
import { WhisperFeatureExtractor, WHISPER_SAMPLE_RATE, WHISPER_WINDOW_SAMPLES } from './whisper-features.js';
import { Seq2SeqDecoder, floatTensor, lastLogits } from './seq2seq-decoder.js';
import { TIME_PRECISION, applyRules, buildPrompt, isText, seededRandom, selectToken, whisperVocab, windowSegments } from './whisper-decode.js';

const WINDOW_SECONDS = WHISPER_WINDOW_SAMPLES / WHISPER_SAMPLE_RATE;
/** Silence kept before the first speech of a VAD piece (Silero's onsets can come a little late). */
const LEAD_IN_SECONDS = 0.5;

const OptionsSchema = z
  .object({
    /** Suffix of the ONNX files: '' (fp32), '_fp16', '_quantized', '_int8', '_q4'. */
    variant: z.string().default(''),
    /** Language token: a code (`bm`) or the token (`<|bm|>`); null for none. Default `<|bm|>` when the vocabulary has it. */
    language: z.string().nullable().optional(),
    /** false: prompt with `<|notimestamps|>`, one segment per window. */
    timestamps: z.boolean().default(true),
    temperature: z.number().min(0).max(2).default(0),
    /** Tokens generated per window at most (OpenAI's sample_len: 224). */
    maxNewTokens: z.number().int().min(1).max(448).default(224),
    /** Latest first timestamp, in seconds (OpenAI's default 1.0; generation_config's max_initial_timestamp_index wins). */
    maxInitialTimestamp: z.number().min(0).max(30).nullable().default(1),
    /** Audio longer than this is cut into VAD pieces of at most 30 s. */
    maxChunkSeconds: z.number().min(1).max(30).default(30),
  })
  .passthrough();

const TranscribeInput = z.object({
  /** The whole audio; left out when it comes as the job's streamed input. */
  samples: z.instanceof(Float32Array).optional(),
  temperature: z.number().min(0).max(2).optional(),
  task: z.enum(['transcribe', 'translate']).optional(),
  language: z.string().min(1).optional(),
  /** Seed of the sampler (temperature > 0): the same seed gives the same output. */
  seed: z.number().int().optional(),
});
type TranscribeInput = z.infer<typeof TranscribeInput>;
const InputWindow = z.instanceof(Float32Array);

async function* checkedWindows(input: AsyncIterable<unknown>): AsyncGenerator<Float32Array> {
  for await (const window of input) yield InputWindow.parse(window);
}

export interface WindowDecode {
  /** Generated ids, `<|endoftext|>` included when the model ended the window. */
  ids: number[];
  /** The same as strings: text tokens decoded (` kɛnɛ`), special and timestamp tokens as written (`<|0.54|>`). */
  tokens: string[];
}

function readJson(file: string, required: boolean): Record<string, unknown> {
  if (!fs.existsSync(file)) {
    if (required) throw new Error(`The Whisper model directory is missing ${path.basename(file)}: ${file}`);
    return {};
  }
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
  } catch (err) {
    throw new Error(`Cannot parse ${file}: ${(err as Error).message}`);
  }
}

const int = (config: Record<string, unknown>, name: string, file: string): number => {
  if (!Number.isInteger(config[name])) throw new Error(`${file} has no ${name}`);
  return config[name] as number;
};
const intList = (v: unknown): number[] => (Array.isArray(v) ? v.filter((x): x is number => Number.isInteger(x)) : []);

export const createWhisperRunner: RunnerFactory = async ({ entry, dir, intraOpThreads, interOpThreads }) => {
  const options = OptionsSchema.parse(entry.options);
  if (!fs.existsSync(dir)) throw new Error(`The Whisper model directory does not exist: ${dir}`);
  const configFile = path.join(dir, 'config.json');
  const config = readJson(configFile, true);
  if (config.model_type !== undefined && config.model_type !== 'whisper')
    throw new Error(`${configFile}: model_type is ${String(config.model_type)}, not whisper`);
  const generation = readJson(path.join(dir, 'generation_config.json'), false);
  const preprocessor = readJson(path.join(dir, 'preprocessor_config.json'), false);
  const layers = int(config, 'decoder_layers', configFile);
  const heads = int(config, 'decoder_attention_heads', configFile);
  const headDim = int(config, 'd_model', configFile) / heads;
  const nMels = (preprocessor.feature_size ?? config.num_mel_bins ?? 80) as number;
  if (nMels !== 80 && nMels !== 128) throw new Error(`${dir}: ${nMels} mel bins; Whisper uses 80 or 128`);
  const rate = preprocessor.sampling_rate ?? WHISPER_SAMPLE_RATE;
  if (rate !== WHISPER_SAMPLE_RATE) throw new Error(`${dir}: the model expects ${String(rate)} Hz audio; Whisper takes 16000 Hz`);
  const tokenizer = TextTokenizer.fromDirectory(dir);
  const vocab = whisperVocab(tokenizer, Number.isInteger(config.vocab_size) ? (config.vocab_size as number) : tokenizer.addedTokens().at(-1)!.id + 1);
  const maxTarget = Number.isInteger(config.max_target_positions) ? (config.max_target_positions as number) : 448;
  const initialIndex = Number.isInteger(generation.max_initial_timestamp_index)
    ? (generation.max_initial_timestamp_index as number)
    : options.maxInitialTimestamp === null
      ? undefined
      : Math.round(options.maxInitialTimestamp / TIME_PRECISION);
  const rules = {
    suppress: intList(generation.suppress_tokens),
    beginSuppress: intList(generation.begin_suppress_tokens),
    maxInitialTimestampIndex: initialIndex,
  };

  const languageId = (code: string | null | undefined, where: string): number | undefined => {
    if (code === null) return undefined;
    if (code === undefined) return vocab.languages.get('bm');
    const bare = /^<\|(.*)\|>$/.exec(code)?.[1] ?? code.toLowerCase();
    const id = vocab.languages.get(bare === 'bam' ? 'bm' : bare);
    if (id === undefined) throw new Error(`The language ${code} (${where}) is not in this Whisper model (it knows ${[...vocab.languages.keys()].join(', ')})`);
    return id;
  };
  const defaultLanguage = languageId(options.language, 'options.language');

  const sessionOptions = { intraOpThreads, interOpThreads };
  const encoderFile = path.join(dir, 'onnx', `encoder_model${options.variant}.onnx`);
  if (!fs.existsSync(encoderFile)) {
    const present = fs.existsSync(path.join(dir, 'onnx'))
      ? fs
          .readdirSync(path.join(dir, 'onnx'))
          .filter((f) => f.endsWith('.onnx'))
          .sort()
      : [];
    throw new Error(
      `The Whisper model directory ${dir} is missing onnx/${path.basename(encoderFile)} (variant ${JSON.stringify(options.variant)}; found ${present.join(', ') || 'no ONNX files'})`,
    );
  }
  const encoder: LoadedSession = await createSession(encoderFile, sessionOptions);
  let decoder: Seq2SeqDecoder;
  try {
    requireSignature(encoder, ['input_features'], ['last_hidden_state']);
    const meta = encoder.session.inputMetadata.find((m) => m.name === 'input_features');
    const declared = meta?.isTensor ? meta.shape[1] : undefined;
    if (typeof declared === 'number' && declared !== nMels)
      throw new Error(`${encoderFile}: input_features has ${declared} mel bins, preprocessor_config.json says ${nMels}`);
    decoder = await Seq2SeqDecoder.load({ dir, variant: options.variant, layers, heads, headDim, session: sessionOptions, family: 'Whisper' });
  } catch (err) {
    await encoder.release();
    throw err;
  }
  const features = await WhisperFeatureExtractor.create({ nMels, intraOpThreads, interOpThreads });
  let vad: Promise<SileroVad> | null = null;

  /** Decodes one window (≤ 30 s, starting at its first sample). */
  async function decodeWindow(samples: Float32Array, prompt: number[], temperature: number, random: () => number, ctx: RunnerContext): Promise<number[]> {
    const mel = await features.compute(samples);
    const encoded = await encoder.run({ input_features: floatTensor(mel, [1, nMels, mel.length / nMels], encoder.inputTypes.input_features) });
    await ctx.checkpoint();
    const cache = decoder.start(encoded.last_hidden_state!);
    const sampled: number[] = [];
    const budget = Math.min(options.maxNewTokens, maxTarget - prompt.length);
    let input = prompt;
    while (sampled.length < budget) {
      const logits = lastLogits(await decoder.step(cache, [input]));
      applyRules(logits, sampled, vocab, { ...rules, timestamps: options.timestamps });
      const token = selectToken(logits, temperature, random);
      sampled.push(token);
      if (token === vocab.eot) break;
      input = [token];
      await ctx.checkpoint();
    }
    return sampled;
  }

  function promptFor(input: Pick<TranscribeInput, 'task' | 'language'>): number[] {
    const language = input.language === undefined ? defaultLanguage : languageId(input.language, 'the request');
    return buildPrompt(vocab, { task: input.task ?? 'transcribe', timestamps: options.timestamps, ...(language === undefined ? {} : { language }) });
  }

  /** Decodes a piece of audio window after window (OpenAI's seek), yielding absolute segments. */
  async function* decodePiece(
    piece: Float32Array,
    offset: number,
    prompt: number[],
    temperature: number,
    random: () => number,
    ctx: RunnerContext,
  ): AsyncGenerator<Segment> {
    let seek = 0;
    // Whisper's mel has one frame per 10 ms: a shorter leftover carries no audio worth a window.
    while (piece.length - seek >= WHISPER_SAMPLE_RATE * 0.01) {
      const window = piece.subarray(seek, Math.min(piece.length, seek + WHISPER_WINDOW_SAMPLES));
      const windowSeconds = window.length / WHISPER_SAMPLE_RATE;
      const ids = await decodeWindow(window, prompt, temperature, random, ctx);
      const generated = ids.at(-1) === vocab.eot ? ids.slice(0, -1) : ids;
      const { segments, consumed } = options.timestamps
        ? windowSegments(generated, vocab, windowSeconds)
        : { segments: [{ start: 0, end: windowSeconds, tokens: generated.filter((id) => isText(vocab, id)) }], consumed: windowSeconds };
      const start = offset + seek / WHISPER_SAMPLE_RATE;
      for (const segment of segments) {
        const text = tokenizer.decode(segment.tokens).trim();
        if (text) yield { start: round(start + segment.start), end: round(start + segment.end), text, words: [] };
      }
      seek += Math.max(1, Math.round(consumed * WHISPER_SAMPLE_RATE));
    }
  }

  async function* transcribe(input: TranscribeInput, windows: AsyncIterable<Float32Array>, ctx: RunnerContext): AsyncGenerator<Segment> {
    const prompt = promptFor(input);
    const temperature = input.temperature ?? options.temperature;
    const random = seededRandom(input.seed ?? Math.floor(Math.random() * 2 ** 32));
    // Cut in the middle of the chosen pause (VAD gaps are silence); pieces are ≤ maxChunkSeconds and those
    // without speech are dropped. A piece then starts LEAD_IN_SECONDS before its first speech, because a
    // window's first timestamp may not be later than max_initial_timestamp (1 s).
    const pieces = plannedChunks(windows, {
      rate: WHISPER_SAMPLE_RATE,
      maxChunkSeconds: options.maxChunkSeconds,
      pickCut: (_audio, from, to) => (from + to) / 2,
      vad: () => (vad ??= SileroVad.load(sessionOptions)),
      checkpoint: () => ctx.checkpoint(),
    });
    for await (const piece of pieces) {
      await ctx.checkpoint();
      const first = piece.regions[0];
      const start = first ? Math.max(piece.start, first.start - LEAD_IN_SECONDS) : piece.start;
      const audio = piece.slice(start, piece.end);
      yield* decodePiece(audio.samples, audio.offsetSeconds, prompt, temperature, random, ctx);
    }
  }

  async function decode(input: TranscribeInput, ctx: RunnerContext): Promise<WindowDecode> {
    if (!input.samples) throw new Error('decode takes its samples whole, not as a streamed input');
    const window = input.samples.subarray(0, WHISPER_WINDOW_SAMPLES);
    const random = seededRandom(input.seed ?? Math.floor(Math.random() * 2 ** 32));
    const ids = await decodeWindow(window, promptFor(input), input.temperature ?? options.temperature, random, ctx);
    const name = (id: number) =>
      isText(vocab, id)
        ? tokenizer.decode([id], { cleanUpSpaces: false })
        : (tokenizer.idToToken(id) ?? `<|${((id - vocab.timestampBegin) * TIME_PRECISION).toFixed(2)}|>`);
    return { ids, tokens: ids.map(name) };
  }

  const idle: RunnerContext = { signal: new AbortController().signal, checkpoint: async () => {} };
  return {
    info: () => ({
      engine: 'whisper',
      sampleRate: WHISPER_SAMPLE_RATE,
      layout: decoder.layout,
      files: [path.basename(encoderFile), ...decoder.files],
      nMels,
      layers,
      vocabSize: vocab.size,
      languages: [...vocab.languages.keys()],
      defaultLanguage: defaultLanguage === undefined ? null : tokenizer.idToToken(defaultLanguage),
      translate: vocab.translate !== undefined,
      timestamps: options.timestamps,
      maxChunkSeconds: options.maxChunkSeconds,
      windowSeconds: WINDOW_SECONDS,
    }),
    warmup: async () => {
      await decodeWindow(new Float32Array(WHISPER_SAMPLE_RATE), promptFor({}), 0, Math.random, idle);
    },
    call(method, raw, ctx) {
      if (method === 'transcribe') {
        const input = TranscribeInput.parse(raw);
        if (ctx.input) return transcribe(input, checkedWindows(ctx.input), ctx);
        if (!input.samples) throw new Error('transcribe needs samples, or a streamed input');
        return transcribe(input, oneWindow(input.samples), ctx);
      }
      if (method === 'decode') return decode(TranscribeInput.parse(raw), ctx);
      throw new UnknownMethodError('whisper', method);
    },
    async close() {
      await Promise.all([encoder.release(), decoder.release(), features.close(), vad ? (await vad).close() : undefined]);
    },
  };
};

const round = (seconds: number) => Math.round(seconds * 1000) / 1000;
