/**
 * Contract tests of the Whisper runner on the generated demo Whisper models (merged fp32, fp16-shaped,
 * quantized-shaped, the split decoder pair declaring cache_position, and a vocabulary without `<|bm|>`):
 * exact token sequences for speech and silence, the KV cache shown to matter, segments and absolute times
 * from timestamp tokens (one window, OpenAI's seek, long audio cut by VAD), prompts, sampling, load errors.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import ort from 'onnxruntime-node';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createWhisperRunner, type WindowDecode } from '../../../../src/engines/asr/whisper-runner.js';
import type { Segment } from '../../../../src/engines/asr/ctc-decode.js';
import { WhisperFeatureExtractor } from '../../../../src/engines/asr/whisper-features.js';
import type { Runner, RunnerContext } from '../../../../src/engines/runner.js';
import { UnknownMethodError } from '../../../../src/engines/runner.js';
import { ModelEntrySchema } from '../../../../src/engines/manifest.js';
import { generateWhisperModel, type WhisperDemoOptions } from '../../../../models/generator/demo-whisper.js';
import { speakDemo } from '../../../../models/generator/demo-voice.js';

type Run = (this: unknown, feeds: ort.InferenceSession.FeedsType) => Promise<ort.InferenceSession.ReturnType>;
/** onnxruntime's session class; tests spy on its `run`, which every model call goes through. */
const SESSION = (ort.InferenceSession as unknown as { prototype: { run: Run } }).prototype;
const RATE = 16000;
/** Timestamps come in 20 ms steps; the demo encoder places region edges within one step of the audio. */
const STEP = 0.02 + 1e-9;

const MODELS: Record<string, WhisperDemoOptions & { variant?: string }> = {
  whisper: {},
  'whisper-fp16': { variant: 'fp16' },
  'whisper-quantized': { variant: 'quantized' },
  'whisper-split': { layout: 'split', cachePosition: true },
  'whisper-nobm': { name: 'whisper-nobm', bambaraToken: false },
};
const SUFFIX: Record<string, string> = { fp16: '_fp16', quantized: '_quantized' };

let root: string;
const runners = new Map<string, Runner>();
const ctx: RunnerContext = { signal: new AbortController().signal, checkpoint: async () => {} };

function load(dir: string, options: Record<string, unknown> = {}): Promise<Runner> {
  return createWhisperRunner({
    entry: ModelEntrySchema.parse({ id: 'sunjata-1', engine: 'whisper', dir, options }),
    dir,
    intraOpThreads: 1,
    interOpThreads: 1,
  });
}
const decode = async (runner: Runner, samples: Float32Array, extra: Record<string, unknown> = {}) =>
  ((await runner.call('decode', { samples, ...extra }, ctx)) as WindowDecode).tokens;
async function transcribe(runner: Runner, samples: Float32Array, extra: Record<string, unknown> = {}): Promise<Segment[]> {
  const out: Segment[] = [];
  for await (const segment of runner.call('transcribe', { samples, ...extra }, ctx) as AsyncIterable<Segment>) out.push(segment);
  return out;
}

/** Demo-voice phrases placed at given times; returns the audio and where each phrase's sound starts and ends. */
function audio(parts: Array<{ at: number; text: string }>, seconds: number): { samples: Float32Array; spans: Array<[number, number]> } {
  const samples = new Float32Array(Math.round(seconds * RATE));
  const spans: Array<[number, number]> = [];
  for (const { at, text } of parts) {
    const voice = speakDemo(text, RATE);
    samples.set(voice.samples, Math.round(at * RATE));
    spans.push([at + voice.symbols[0]!.start, at + voice.symbols.at(-1)!.end]);
  }
  return { samples, spans };
}

/** 1.75 s of speech (phrase bucket 1) from 0.35 s, then 2.35 s (bucket 2) from 2.65 s. */
const TWO = audio(
  [
    { at: 0.3, text: 'i ka kɛnɛ wa' },
    { at: 2.6, text: 'abcdefghijklmnopq' },
  ],
  6.5,
);
const TWO_TOKENS = ['<|0.34|>', ' i', ' ka', ' kɛnɛ', ' wa', '<|2.12|>', '<|2.64|>', ' tɔɔrɔ', ' si', ' tɛ', '<|5.02|>', '<|endoftext|>'];
const TWO_SEGMENTS = [
  { start: 0.34, end: 2.12, text: 'i ka kɛnɛ wa', words: [] },
  { start: 2.64, end: 5.02, text: 'tɔɔrɔ si tɛ', words: [] },
];
const SILENCE = new Float32Array(3 * RATE);

beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-whisper-'));
  for (const [name, { variant, ...options }] of Object.entries(MODELS)) {
    await generateWhisperModel(root, { ...options, ...(variant ? { variant: variant as 'fp16' | 'quantized' } : {}) });
    runners.set(name, await load(path.join(root, name), variant ? { variant: SUFFIX[variant] } : {}));
  }
}, 120_000);

afterAll(async () => {
  await Promise.all([...runners.values()].map((r) => r.close()));
  fs.rmSync(root, { recursive: true, force: true });
});

afterEach(() => {
  vi.restoreAllMocks();
});

const runner = (name = 'whisper') => runners.get(name)!;

describe('the demo Whisper model through the runner', () => {
  it('answers speech with <|start|> phrase <|end|> per region, at the 20 ms step where the sound is, then <|endoftext|>', async () => {
    expect(await decode(runner(), TWO.samples)).toEqual(TWO_TOKENS);
    const stamps = TWO_TOKENS.filter((t) => /^<\|\d/.test(t)).map((t) => Number(t.slice(2, -2)));
    TWO.spans.flat().forEach((edge, i) => expect(Math.abs(stamps[i]! - edge)).toBeLessThanOrEqual(STEP));
  });

  it('answers silence with <|endoftext|> after the first timestamp the rules force (and at once without timestamps)', async () => {
    expect(await decode(runner(), SILENCE)).toEqual(['<|0.00|>', '<|endoftext|>']);
    expect(await transcribe(runner(), SILENCE)).toEqual([]);
    const plain = await load(path.join(root, 'whisper'), { timestamps: false });
    expect(await decode(plain, SILENCE)).toEqual(['<|endoftext|>']);
    await plain.close();
  });

  it('yields one segment per timestamp pair with absolute times, and nothing for no audio', async () => {
    expect(await transcribe(runner(), TWO.samples)).toEqual(TWO_SEGMENTS);
    expect(await transcribe(runner(), new Float32Array(0))).toEqual([]);
  });

  it('stops between decoder steps when a checkpoint throws (cancellation)', async () => {
    let steps = 0;
    const cancelling: RunnerContext = {
      signal: new AbortController().signal,
      checkpoint: async () => {
        if (++steps === 3) throw new Error('cancelled');
      },
    };
    const run = vi.spyOn(SESSION, 'run');
    await expect(runner().call('decode', { samples: TWO.samples }, cancelling)).rejects.toThrow('cancelled');
    expect(run.mock.calls.filter((c) => 'input_ids' in (c[0] as object)).length).toBe(2);
  });

  it('without timestamps prompts <|notimestamps|> and yields the window as one segment', async () => {
    const plain = await load(path.join(root, 'whisper'), { timestamps: false });
    expect(await decode(plain, TWO.samples)).toEqual([' i', ' ka', ' kɛnɛ', ' wa', ' tɔɔrɔ', ' si', ' tɛ', '<|endoftext|>']);
    expect(await transcribe(plain, TWO.samples)).toEqual([{ start: 0, end: 6.5, text: 'i ka kɛnɛ wa tɔɔrɔ si tɛ', words: [] }]);
    await plain.close();
  });

  it('clamps a first timestamp later than 1 s to <|1.00|>, as OpenAI’s max_initial_timestamp does', async () => {
    const late = audio([{ at: 2, text: 'abcd' }], 5);
    expect(await decode(runner(), late.samples)).toEqual(['<|1.00|>', ' i', ' ni', ' ce', '<|2.62|>', '<|endoftext|>']);
  });

  it('translates with <|translate|> in the prompt', async () => {
    const tokens = await decode(runner(), TWO.samples, { task: 'translate' });
    expect(tokens).toEqual(['<|0.34|>', ' how', ' are', ' you', '<|2.12|>', '<|2.64|>', ' no', ' problem', '<|5.02|>', '<|endoftext|>']);
  });
});

describe('the KV cache', () => {
  /** Intercepts every decoder run; `rewrite` changes the feeds of cached steps. */
  function intercept(rewrite: (feeds: Record<string, ort.Tensor>) => Record<string, ort.Tensor>) {
    const original = SESSION.run;
    return vi.spyOn(SESSION, 'run').mockImplementation(async function (this: unknown, feeds: ort.InferenceSession.FeedsType) {
      const f = feeds as Record<string, ort.Tensor>;
      const cached = f.use_cache_branch !== undefined && (f.use_cache_branch.data as Uint8Array)[0] === 1;
      return original.call(this, cached ? rewrite({ ...f }) : feeds);
    });
  }

  it('matters: not feeding the decoder presents back changes the output', async () => {
    intercept((f) => {
      for (const name of Object.keys(f))
        if (/^past_key_values\.\d+\.decoder\./.test(name)) f[name] = new ort.Tensor('float32', new Float32Array(0), [1, 2, 0, 4]);
      return f;
    });
    const broken = await decode(runner(), TWO.samples);
    // The model sees only the last token: after " i" it counts no open segment and asks for one to start.
    expect(broken).toEqual(['<|0.34|>', ' i', '<|0.36|>', '<|endoftext|>']);
  });

  it('matters: feeding the empty encoder presents of a cached step instead of the step-0 ones breaks decoding', async () => {
    intercept((f) => {
      for (const name of Object.keys(f))
        if (/^past_key_values\.\d+\.encoder\./.test(name)) f[name] = new ort.Tensor('float32', new Float32Array(0), [0, 2, 1, 4]);
      return f;
    });
    await expect(decode(runner(), TWO.samples)).rejects.toThrow();
  });

  it('feeds the whole prompt at step 0 with zero-length pasts and use_cache_branch=false, then one token at a time', async () => {
    const run = vi.spyOn(SESSION, 'run');
    await decode(runner(), TWO.samples);
    const decoderFeeds = run.mock.calls.map((c) => c[0] as Record<string, ort.Tensor>).filter((f) => 'input_ids' in f);
    expect(decoderFeeds.map((f) => f.input_ids!.dims[1])).toEqual([3, ...new Array(TWO_TOKENS.length - 1).fill(1)]);
    expect((decoderFeeds[0]!.use_cache_branch!.data as Uint8Array)[0]).toBe(0);
    expect(decoderFeeds[0]!['past_key_values.0.decoder.key']!.dims).toEqual([1, 2, 0, 4]);
    expect(decoderFeeds.at(-1)!['past_key_values.0.decoder.key']!.dims).toEqual([1, 2, 3 + TWO_TOKENS.length - 2, 4]);
    expect(decoderFeeds.at(-1)!['past_key_values.1.encoder.value']!.dims).toEqual([1, 2, 1500, 4]);
  });
});

describe('layouts, variants and vocabularies', () => {
  it.each(['whisper-fp16', 'whisper-quantized', 'whisper-split', 'whisper-nobm'])(
    '%s gives the same tokens and segments as the fp32 merged model',
    async (name) => {
      expect(await decode(runner(name), TWO.samples)).toEqual(TWO_TOKENS);
      expect(await decode(runner(name), SILENCE)).toEqual(['<|0.00|>', '<|endoftext|>']);
      expect(await transcribe(runner(name), TWO.samples)).toEqual(TWO_SEGMENTS);
    },
  );

  it('feeds float16 features to an fp16 encoder and reports each model’s files and layout', async () => {
    const run = vi.spyOn(SESSION, 'run');
    await decode(runner('whisper-fp16'), SILENCE);
    const encoderFeeds = run.mock.calls.map((c) => c[0] as Record<string, ort.Tensor>).find((f) => 'input_features' in f)!;
    expect(encoderFeeds.input_features!.type).toBe('float16');
    expect(runner('whisper-fp16').info()).toMatchObject({ layout: 'merged', files: ['encoder_model_fp16.onnx', 'decoder_model_merged_fp16.onnx'] });
    expect(runner('whisper-quantized').info().files).toEqual(['encoder_model_quantized.onnx', 'decoder_model_merged_quantized.onnx']);
    expect(runner('whisper-split').info()).toMatchObject({
      layout: 'split',
      files: ['encoder_model.onnx', 'decoder_model.onnx', 'decoder_with_past_model.onnx'],
    });
  });

  it('prompts <|bm|> (looked up by string, after the 1501 timestamps) by default, and no language where the vocabulary has none', async () => {
    const prompts = async (name: string, extra: Record<string, unknown> = {}) => {
      const run = vi.spyOn(SESSION, 'run');
      await decode(runner(name), SILENCE, extra);
      const first = run.mock.calls.map((c) => c[0] as Record<string, ort.Tensor>).find((f) => 'input_ids' in f)!;
      run.mockRestore();
      return Array.from(first.input_ids!.data as BigInt64Array, Number);
    };
    const config = JSON.parse(fs.readFileSync(path.join(root, 'whisper', 'tokenizer.json'), 'utf8')) as {
      added_tokens: Array<{ id: number; content: string }>;
    };
    const id = (t: string) => config.added_tokens.find((a) => a.content === t)!.id;
    expect(id('<|bm|>')).toBe(id('<|30.00|>') + 1);
    expect(await prompts('whisper')).toEqual([id('<|startoftranscript|>'), id('<|bm|>'), id('<|transcribe|>')]);
    expect(await prompts('whisper', { language: 'fr', task: 'translate' })).toEqual([id('<|startoftranscript|>'), id('<|fr|>'), id('<|translate|>')]);
    expect(await prompts('whisper-nobm')).toEqual([id('<|startoftranscript|>'), id('<|transcribe|>')]);
    expect(runner('whisper').info().defaultLanguage).toBe('<|bm|>');
    expect(runner('whisper-nobm').info().defaultLanguage).toBeNull();
    await expect(decode(runner('whisper-nobm'), SILENCE, { language: 'bm' })).rejects.toThrow(/language bm .* is not in this Whisper model/);
  });
});

describe('long audio', () => {
  it('seeks to the last closing timestamp when a window is cut off, and yields the same segments', async () => {
    const short = await load(path.join(root, 'whisper'), { maxNewTokens: 8 });
    const encoderRuns = vi.spyOn(WhisperFeatureExtractor.prototype, 'compute');
    expect(await transcribe(short, TWO.samples)).toEqual(TWO_SEGMENTS);
    // Window 1 ends mid-segment (8 tokens): window 2 starts at <|2.12|>.
    expect(encoderRuns.mock.calls.map((c) => c[0].length)).toEqual([TWO.samples.length, TWO.samples.length - Math.round(2.12 * RATE)]);
    await short.close();
  });

  it('cuts audio over 30 s at VAD pauses into pieces of at most 30 s and gives absolute times', async () => {
    // Letters Silero VAD scores as speech (t n s a b c e g: ≥ 0.7 per window), so its regions cover each phrase.
    const parts = [
      { at: 1, text: 'tana' }, // 0.55 s: bucket 0
      { at: 12, text: 'tanasaba' }, // 1.15 s: bucket 1
      { at: 27.5, text: 'tanasabacesanega' }, // 2.35 s across the 30 s mark: bucket 2
      { at: 40, text: 'tanasabacesanegatanasaba' }, // 3.55 s: bucket 3
      { at: 61, text: 'tanasaba' },
    ];
    const long = audio(parts, 70);
    const pieces = vi.spyOn(WhisperFeatureExtractor.prototype, 'compute');
    const segments = await transcribe(runner(), long.samples);
    expect(segments.map((s) => s.text)).toEqual(['i ni ce', 'i ka kɛnɛ wa', 'tɔɔrɔ si tɛ', 'an bɛ baara la', 'i ka kɛnɛ wa']);
    segments.forEach((segment, i) => {
      expect(Math.abs(segment.start - long.spans[i]![0])).toBeLessThanOrEqual(STEP);
      expect(Math.abs(segment.end - long.spans[i]![1])).toBeLessThanOrEqual(STEP);
    });
    expect(pieces.mock.calls.length).toBeGreaterThanOrEqual(3);
    for (const [samples] of pieces.mock.calls) expect(samples.length).toBeLessThanOrEqual(30 * RATE);
  });
});

describe('sampling', () => {
  it('is greedy at temperature 0 whatever the seed', async () => {
    for (const seed of [1, 2]) expect(await decode(runner(), TWO.samples, { temperature: 0, seed })).toEqual(TWO_TOKENS);
  });

  it('samples at temperature 1: a fixed seed reproduces its output, and seeds differ from greedy', async () => {
    const sampled = await Promise.all([1, 2, 3, 4, 5].map((seed) => decode(runner(), TWO.samples, { temperature: 1, seed })));
    expect(await decode(runner(), TWO.samples, { temperature: 1, seed: 2 })).toEqual(sampled[1]);
    expect(sampled[1]).toEqual(['<|0.34|>', ' i', ' ka', ' kɛnɛ', ' wà', '<|2.12|>', '<|2.64|>', ' tɔɔrɔ', ' si', ' te', '<|5.02|>', '<|endoftext|>']);
    expect(sampled.filter((tokens) => JSON.stringify(tokens) !== JSON.stringify(TWO_TOKENS)).length).toBeGreaterThanOrEqual(3);
  });
});

describe('load-time validation', () => {
  function copy(name = 'whisper'): string {
    const dir = fs.mkdtempSync(path.join(root, `${name}-broken-`));
    fs.cpSync(path.join(root, name), dir, { recursive: true });
    return dir;
  }

  it('names a missing encoder, a missing decoder, a missing sidecar, and a variant that is not there', async () => {
    let dir = copy();
    fs.rmSync(path.join(dir, 'onnx', 'encoder_model.onnx'));
    await expect(load(dir)).rejects.toThrow(/missing onnx\/encoder_model\.onnx .*found decoder_model_merged\.onnx/);
    dir = copy();
    fs.rmSync(path.join(dir, 'onnx', 'decoder_model_merged.onnx'));
    await expect(load(dir)).rejects.toThrow(/no decoder_model_merged\.onnx and is missing decoder_model\.onnx, decoder_with_past_model\.onnx/);
    dir = copy();
    fs.rmSync(path.join(dir, 'tokenizer.json'));
    await expect(load(dir)).rejects.toThrow(/Tokenizer file not found/);
    dir = copy();
    fs.rmSync(path.join(dir, 'config.json'));
    await expect(load(dir)).rejects.toThrow(/missing config\.json/);
    await expect(load(path.join(root, 'whisper'), { variant: '_fp16' })).rejects.toThrow(
      /missing onnx\/encoder_model_fp16\.onnx \(variant "_fp16"; found decoder_model_merged\.onnx, encoder_model\.onnx\)/,
    );
  });

  it('rejects files with the wrong signature, and mel bins or layers that disagree with the config', async () => {
    let dir = copy();
    fs.copyFileSync(path.join(dir, 'onnx', 'decoder_model_merged.onnx'), path.join(dir, 'onnx', 'encoder_model.onnx'));
    await expect(load(dir)).rejects.toThrow(/does not have the expected signature: missing inputs input_features; missing outputs last_hidden_state/);
    dir = copy();
    fs.copyFileSync(path.join(dir, 'onnx', 'encoder_model.onnx'), path.join(dir, 'onnx', 'decoder_model_merged.onnx'));
    await expect(load(dir)).rejects.toThrow(/missing inputs input_ids, encoder_hidden_states, use_cache_branch/);
    dir = copy();
    const pre = JSON.parse(fs.readFileSync(path.join(dir, 'preprocessor_config.json'), 'utf8')) as Record<string, unknown>;
    fs.writeFileSync(path.join(dir, 'preprocessor_config.json'), JSON.stringify({ ...pre, feature_size: 128 }));
    await expect(load(dir)).rejects.toThrow(/input_features has 80 mel bins, preprocessor_config\.json says 128/);
    dir = copy();
    const config = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ ...config, decoder_layers: 1 }));
    await expect(load(dir)).rejects.toThrow(/more decoder layers than config\.json's 1/);
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ ...config, model_type: 'wav2vec2' }));
    await expect(load(dir)).rejects.toThrow(/model_type is wav2vec2, not whisper/);
  });

  it('rejects an unknown method and a language the model does not know', async () => {
    expect(() => runner().call('synthesize', {}, ctx)).toThrow(UnknownMethodError);
    await expect(load(path.join(root, 'whisper'), { language: 'xx' })).rejects.toThrow(/language xx \(options\.language\) is not in this Whisper model/);
  });
});
