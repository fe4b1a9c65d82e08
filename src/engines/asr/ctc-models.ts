/**
 * The two exportable CTC layouts, loaded: HF wav2vec2/MMS (`ctc-wav2vec2`: `input_values [B,N]` → `logits`,
 * sidecars vocab.json/config.json/preprocessor_config.json) and NeMo (`ctc-nemo`: log-mel
 * `audio_signal [B,n_mels,T]` + `length [B]` → `logprobs`, blank last, tokens.txt and the preprocessor
 * settings). Each checks its signature at load and turns 16 kHz samples into CTC scores.
 */
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { createSession, ort, requireSignature, type LoadedSession, type SessionOptions } from '../onnx/session.js';
import { readModelMetadata } from '../onnx/model-metadata.js';
import { DEFAULT_SEGMENT_OPTIONS, parseHfVocab, parseTokensTxt, tokenPieces } from './ctc-decode.js';
import { DEFAULT_NEMO_FEATURES, nemoLogMel, type NemoFeatureConfig } from './nemo-features.js';
import { StreamingSchema } from './streaming-options.js';
import { CtcStream } from './ctc-stream.js';

export const CTC_SAMPLE_RATE = 16000;

export const OptionsSchema = z
  .object({
    /** Model file inside the directory (default: model.onnx, then onnx/model.onnx). */
    modelFile: z.string().optional(),
    /** MMS adapter repos ship one vocabulary per language: which one (e.g. `bam`). */
    language: z.string().optional(),
    /** Longest audio one model run takes (long audio is walked in windows); default by layout, below. */
    maxChunkSeconds: z.number().min(1).max(120).optional(),
    /** Audio of the warm-up run at load (default: one whole window, maxChunkSeconds). */
    warmupSeconds: z.number().min(0.1).max(120).optional(),
    /** Long audio: context each model window re-reads on either side of the audio it keeps (frames-walk.ts). */
    contextSeconds: z.number().min(0).max(10).default(1),
    minPauseSeconds: z.number().min(0).default(DEFAULT_SEGMENT_OPTIONS.minPauseSeconds),
    maxSegmentSeconds: z.number().min(1).default(DEFAULT_SEGMENT_OPTIONS.maxSegmentSeconds),
    /** Output frame hop and span; derived from the model's config when absent (FastConformer: 0.08). */
    frameSeconds: z.number().positive().optional(),
    windowSeconds: z.number().positive().optional(),
    /** NeMo: encoder time subsampling (QuartzNet 2, FastConformer 8); measured on a probe run if unknown. */
    subsamplingFactor: z.number().int().min(1).optional(),
    normalize: z.enum(['per_feature', 'all_features', 'NA']).optional(),
    /** NeMo ≥ 1.23 pads the STFT with zeros; older checkpoints' preprocessors reflect. */
    stftPadMode: z.enum(['constant', 'reflect']).default('constant'),
    /** Realtime turns are encoded in chunks as they are spoken (src/realtime/chunked-turn.ts): how. */
    streaming: StreamingSchema.default(StreamingSchema.parse({})),
  })
  .passthrough();
export type Options = z.infer<typeof OptionsSchema> & { maxChunkSeconds: number };

/**
 * The window for long audio when the entry sets none. wav2vec2/MMS/XLS-R: 15 s — self-attention's cost
 * grows with the window's square, so two 15 s windows cost less than one of 30 s (wav2vec2-base, a 60 s
 * upload: 1.09× the CPU of raw onnxruntime on plain 30 s windows, against 1.15× with 30 s windows;
 * bench:rest:real-size), and the activations of a run are a quarter; 15 s of context is beyond what CTC
 * needs to spell a word. NeMo (convolutional, or attention over 8×-subsampled frames): 30 s.
 */
const DEFAULT_MAX_CHUNK_SECONDS: Record<string, number> = { 'ctc-wav2vec2': 15, 'ctc-nemo': 30 };

/** The entry's options, validated, with the layout's defaults. */
export function parseOptions(engine: string, raw: unknown): Options {
  const options = OptionsSchema.parse(raw);
  return { ...options, maxChunkSeconds: options.maxChunkSeconds ?? DEFAULT_MAX_CHUNK_SECONDS[engine] ?? 30 };
}

/** One loaded layout: how to turn 16 kHz samples into CTC scores, and how to read them. */
export interface CtcModel {
  pieces: string[];
  blank: number;
  frameSeconds: number;
  windowSeconds: number;
  /** Shorter chunks produce no frame. */
  minSamples: number;
  info: Record<string, unknown>;
  scores(samples: Float32Array): Promise<{ data: Float32Array; frames: number; vocab: number }>;
  loaded: LoadedSession;
  /** Stateful streaming (convolutional NeMo models whose graph and features allow it; ctc-stream.ts). */
  stream?: CtcStream;
}

function readJson(file: string, what: string): Record<string, unknown> {
  if (!fs.existsSync(file)) throw new Error(`The CTC model directory is missing ${path.basename(file)} (${what}): ${file}`);
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
  } catch (err) {
    throw new Error(`Cannot parse ${file}: ${(err as Error).message}`);
  }
}

const readOptionalJson = (file: string) => (fs.existsSync(file) ? readJson(file, '') : {});

function findModel(dir: string, options: Options, candidates: string[]): string {
  const names = options.modelFile ? [options.modelFile] : candidates;
  const found = names.map((n) => path.resolve(dir, n)).find((f) => fs.existsSync(f));
  if (!found) throw new Error(`The CTC model directory ${dir} has no model file (looked for ${names.join(', ')})`);
  return found;
}

/** Runs load-time checks on a session, releasing it when they fail so a bad model leaks nothing. */
async function checked<T>(loaded: LoadedSession, checks: () => T): Promise<T> {
  try {
    return checks();
  } catch (err) {
    await loaded.release();
    throw err;
  }
}

/** Checks dtype and rank where the model declares them (the names are requireSignature's); returns the shape. */
function requireTensor(loaded: LoadedSession, kind: 'input' | 'output', name: string, type: string, rank: number): ReadonlyArray<number | string> {
  const meta = (kind === 'input' ? loaded.session.inputMetadata : loaded.session.outputMetadata).find((m) => m.name === name);
  if (!meta || !meta.isTensor) return [];
  if (meta.type !== type) throw new Error(`${loaded.file}: ${kind} ${name} is ${meta.type}, expected ${type}`);
  if (meta.shape.length && meta.shape.length !== rank) throw new Error(`${loaded.file}: ${kind} ${name} has rank ${meta.shape.length}, expected ${rank}`);
  return meta.shape;
}

export async function loadWav2vec2(dir: string, options: Options, session: SessionOptions): Promise<CtcModel> {
  const config = readJson(path.join(dir, 'config.json'), 'the model config with pad_token_id');
  const preprocessor = readOptionalJson(path.join(dir, 'preprocessor_config.json'));
  const tokenizer = { ...readOptionalJson(path.join(dir, 'special_tokens_map.json')), ...readOptionalJson(path.join(dir, 'tokenizer_config.json')) };
  const language = options.language ?? (typeof tokenizer.target_lang === 'string' ? tokenizer.target_lang : undefined);
  const tokens = parseHfVocab(readJson(path.join(dir, 'vocab.json'), 'the CTC vocabulary'), language);
  const padToken = typeof tokenizer.pad_token === 'string' ? tokenizer.pad_token : '[PAD]';
  const blank = typeof config.pad_token_id === 'number' ? config.pad_token_id : tokens.indexOf(padToken);
  if (blank < 0 || blank >= tokens.length) throw new Error(`${dir}: cannot find the CTC blank (config.json pad_token_id ${String(config.pad_token_id)})`);
  const rate = preprocessor.sampling_rate ?? CTC_SAMPLE_RATE;
  if (rate !== CTC_SAMPLE_RATE) throw new Error(`${dir}: the model expects ${String(rate)} Hz audio; the CTC runner feeds 16000 Hz`);
  // The conv feature encoder fixes the frame hop (product of strides) and span (receptive field).
  const kernels = Array.isArray(config.conv_kernel) ? (config.conv_kernel as number[]) : [10, 3, 3, 3, 3, 2, 2];
  const strides = Array.isArray(config.conv_stride) ? (config.conv_stride as number[]) : [5, 2, 2, 2, 2, 2, 2];
  const hop = strides.reduce((a, b) => a * b, 1);
  const span = kernels.reduceRight((field, k, i) => (field - 1) * strides[i]! + k, 1);
  const specials = [
    '[PAD]',
    '[UNK]',
    '<pad>',
    '<unk>',
    '<s>',
    '</s>',
    ...['pad_token', 'unk_token', 'bos_token', 'eos_token'].map((k) => tokenizer[k]).filter((t): t is string => typeof t === 'string'),
  ];
  const delimiter = typeof tokenizer.word_delimiter_token === 'string' ? tokenizer.word_delimiter_token : '|';
  const normalize = preprocessor.do_normalize !== false;

  const loaded = await createSession(findModel(dir, options, ['model.onnx', 'onnx/model.onnx']), session);
  await checked(loaded, () => {
    requireSignature(loaded, ['input_values'], ['logits']);
    requireTensor(loaded, 'input', 'input_values', 'float32', 2);
    const classes = requireTensor(loaded, 'output', 'logits', 'float32', 3)[2];
    // config.json's vocab_size may exceed vocab.json (padding rows); fewer classes than tokens is a mismatch.
    if (typeof classes === 'number' && classes < tokens.length)
      throw new Error(`${loaded.file}: logits has ${classes} classes but vocab.json has ${tokens.length} tokens`);
  });
  return {
    pieces: tokenPieces(tokens, { blank, delimiter, specials }),
    blank,
    frameSeconds: options.frameSeconds ?? hop / CTC_SAMPLE_RATE,
    windowSeconds: options.windowSeconds ?? span / CTC_SAMPLE_RATE,
    minSamples: span,
    loaded,
    info: { layout: 'wav2vec2', vocabSize: tokens.length, blank, normalize },
    async scores(samples) {
      // Wav2Vec2FeatureExtractor: zero mean, unit variance per utterance (here per chunk).
      // Indexed loops: for…of and Float32Array.from(mapFn) over typed arrays cost ~20× more here (measured).
      let input = samples;
      if (normalize) {
        // One pass for both moments (float64 sums of samples in [-1, 1]: no cancellation worth the name), one
        // to scale: the three passes this replaced took ≈ 40 % as long as the model run itself on the demo model.
        const n = samples.length;
        let sum = 0;
        let squares = 0;
        for (let i = 0; i < n; i++) {
          const x = samples[i]!;
          sum += x;
          squares += x * x;
        }
        const mean = sum / n;
        const variance = Math.max(0, squares / n - mean * mean);
        const scale = 1 / Math.sqrt(variance + 1e-7);
        input = new Float32Array(n);
        for (let i = 0; i < n; i++) input[i] = (samples[i]! - mean) * scale;
      }
      const out = await loaded.run({ input_values: new ort.Tensor('float32', input, [1, input.length]) });
      const logits = out.logits!;
      return { data: logits.data as Float32Array, frames: logits.dims[1]!, vocab: logits.dims[2]! };
    },
  };
}

export async function loadNemo(dir: string, options: Options, session: SessionOptions): Promise<CtcModel> {
  const tokensFile = path.join(dir, 'tokens.txt');
  if (!fs.existsSync(tokensFile)) throw new Error(`The CTC model directory is missing tokens.txt (the NeMo vocabulary): ${tokensFile}`);
  const tokens = parseTokensTxt(fs.readFileSync(tokensFile, 'utf8'));
  const modelFile = findModel(dir, options, ['model.onnx', 'model.int8.onnx']);
  const metadata = readModelMetadata(modelFile);
  const config = readOptionalJson(path.join(dir, 'model_config.json'));
  const pre = (config.preprocessor ?? {}) as Record<string, unknown>;
  const num = (v: unknown, fallback: number) => (typeof v === 'number' ? v : fallback);

  // NeMo's AudioToMelSpectrogramPreprocessor settings (model_config.yaml), with NeMo's defaults.
  const sampleRate = num(pre.sample_rate ?? config.sample_rate, CTC_SAMPLE_RATE);
  if (sampleRate !== CTC_SAMPLE_RATE) throw new Error(`${dir}: the model expects ${sampleRate} Hz audio; the CTC runner feeds 16000 Hz`);
  if (num(pre.frame_splicing, 1) !== 1) throw new Error(`${dir}: frame_splicing > 1 is not supported`);
  const winLength = Math.round(num(pre.window_size, 0.02) * sampleRate);
  const metaNormalize = metadata.normalize_type === undefined ? undefined : metadata.normalize_type || 'NA';
  const normalize = options.normalize ?? (pre.normalize as string | undefined) ?? metaNormalize ?? 'per_feature';
  if (!['per_feature', 'all_features', 'NA'].includes(normalize)) throw new Error(`${dir}: unsupported normalize ${JSON.stringify(normalize)}`);
  const window = (pre.window as string | undefined) ?? 'hann';
  if (!['hann', 'hamming', 'none'].includes(window)) throw new Error(`${dir}: unsupported window ${window}`);

  const loaded = await createSession(modelFile, session);
  const { declaredMels, classes } = await checked(loaded, () => {
    requireSignature(loaded, ['audio_signal', 'length'], ['logprobs']);
    requireTensor(loaded, 'input', 'length', 'int64', 1);
    const classes = requireTensor(loaded, 'output', 'logprobs', 'float32', 3)[2];
    // tokens.txt lists the blank last (sherpa) or stops before it (NeMo's own vocabulary).
    if (typeof classes === 'number' && classes !== tokens.length && classes !== tokens.length + 1) {
      throw new Error(`${loaded.file}: logprobs has ${classes} classes but tokens.txt has ${tokens.length} tokens`);
    }
    return { declaredMels: requireTensor(loaded, 'input', 'audio_signal', 'float32', 3)[1], classes };
  });

  const features: NemoFeatureConfig = {
    ...DEFAULT_NEMO_FEATURES,
    sampleRate,
    nMels: num(pre.features ?? pre.nfilt, typeof declaredMels === 'number' ? declaredMels : Number(metadata.feat_dim ?? 64)),
    winLength,
    hopLength: Math.round(num(pre.window_stride, 0.01) * sampleRate),
    nFft: num(pre.n_fft, 2 ** Math.ceil(Math.log2(winLength))),
    preemph: pre.preemph === null ? 0 : num(pre.preemph, 0.97),
    window: window as NemoFeatureConfig['window'],
    log: pre.log !== false,
    logGuard: num(pre.log_zero_guard_value, 2 ** -24),
    normalize: normalize as NemoFeatureConfig['normalize'],
    padTo: num(pre.pad_to, 0),
    padMode: options.stftPadMode,
    lowFreq: num(pre.lowfreq, 0),
    highFreq: num(pre.highfreq, sampleRate / 2),
  };
  if (typeof declaredMels === 'number' && declaredMels !== features.nMels) {
    await loaded.release();
    throw new Error(`${modelFile}: audio_signal has ${declaredMels} features but the config says ${features.nMels}`);
  }

  const run = async (samples: Float32Array) => {
    const mel = nemoLogMel(samples, features);
    const out = await loaded.run({
      audio_signal: new ort.Tensor('float32', mel.data, [1, features.nMels, mel.frames]),
      length: new ort.Tensor('int64', BigInt64Array.from([BigInt(mel.validFrames)]), [1]),
    });
    const logprobs = out.logprobs!;
    return { mel, data: logprobs.data as Float32Array, frames: logprobs.dims[1]!, vocab: logprobs.dims[2]! };
  };
  const encoder = (config.encoder ?? {}) as Record<string, unknown>;
  let subsampling =
    options.subsamplingFactor ?? (typeof encoder.subsampling_factor === 'number' ? encoder.subsampling_factor : Number(metadata.subsampling_factor) || 0);
  if (!subsampling) {
    // QuartzNet configs do not state it: measure it on 4 s of silence (401 feature frames).
    const probe = await run(new Float32Array(4 * sampleRate));
    subsampling = Math.max(1, Math.round(probe.mel.validFrames / probe.frames));
  }
  const frameSeconds = options.frameSeconds ?? (features.hopLength * subsampling) / sampleRate;
  const minSamples = 2 * features.hopLength;
  // The blank is the last class: the declared class count, else after tokens.txt's words (or its own last line).
  const blank = typeof classes === 'number' ? classes - 1 : /^<(blk|blank)>$/.test(tokens.at(-1) ?? '') ? tokens.length - 1 : tokens.length;
  let stream: CtcStream | { refusal: string } = { refusal: 'turned off (streaming.stateful: false)' };
  if (options.streaming.stateful) {
    try {
      stream = await CtcStream.load(modelFile, { config: features, subsampling, minSamples, blank }, session);
    } catch (err) {
      stream = { refusal: `its step graph did not load: ${(err as Error).message}` };
    }
  }
  return {
    pieces: tokenPieces(tokens, { blank: -1, specials: ['<blk>', '<blank>', '<unk>', '<pad>', '<s>', '</s>'] }),
    blank: -1, // NeMo's blank is the last class, whatever the vocabulary file lists: resolved per run
    frameSeconds,
    windowSeconds: options.windowSeconds ?? frameSeconds,
    minSamples,
    loaded,
    ...(stream instanceof CtcStream ? { stream } : {}),
    info: {
      layout: 'nemo',
      vocabSize: tokens.length,
      normalize,
      nMels: features.nMels,
      subsampling,
      stateful: stream instanceof CtcStream,
      ...(stream instanceof CtcStream ? { statefulLookaheadSeconds: stream.lookaheadSeconds } : { statefulRefusal: stream.refusal }),
    },
    async scores(samples) {
      const { mel, data, frames, vocab } = await run(samples);
      // Padding frames (pad_to) produce outputs past the audio; keep the frames that cover it.
      return { data, frames: Math.min(frames, Math.ceil(mel.validFrames / subsampling)), vocab };
    },
  };
}
