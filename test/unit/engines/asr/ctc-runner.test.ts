/**
 * Contract tests of the CTC runner on the generated demo models in both real layouts (HF wav2vec2 and
 * NeMo): exact transcripts of the demo voice, word times within one 20 ms frame of where speakDemo put
 * each symbol, segmenting, VAD chunking of long audio, cancellation, and clear load errors.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCtcRunner } from '../../../../src/engines/asr/ctc-runner.js';
import type { Segment } from '../../../../src/engines/asr/ctc-decode.js';
import type { Runner, RunnerContext } from '../../../../src/engines/runner.js';
import type { EngineType } from '../../../../src/engines/manifest.js';
import { ModelEngine } from '../../../../src/engines/runtime/model-engine.js';
import { resample } from '../../../../src/codecs/resample.js';
import { generateCtcModels } from '../../../../models/generator/demo-ctc.js';
import { GraphBuilder } from '../../../../src/engines/onnx/graph-builder.js';
import onnxProto from 'onnx-proto';
import { DEMO_SYMBOLS, speakDemo } from '../../../../models/generator/demo-voice.js';

const { onnx } = onnxProto;
const RATE = 16000;
const FRAME = 0.02;
let root: string;
const runners = new Map<string, Runner>();

function load(engine: EngineType, dir: string, options: Record<string, unknown> = {}): Promise<Runner> {
  return createCtcRunner({ entry: { id: 'asr', aliases: [], engine, dir, replicas: 1, maxQueue: 1, options }, dir, intraOpThreads: 1, interOpThreads: 1 });
}

const context = (checkpoint: () => Promise<void> = async () => {}): RunnerContext => ({ signal: new AbortController().signal, checkpoint });

async function transcribe(runner: Runner, samples: Float32Array, ctx = context()): Promise<Segment[]> {
  const segments: Segment[] = [];
  for await (const segment of runner.call('transcribe', { samples }, ctx) as AsyncIterable<Segment>) segments.push(segment);
  return segments;
}

/** speakDemo is slow (tens of ms per symbol): each text is rendered once and shared by both layouts. */
const rendered = new Map<string, ReturnType<typeof speakDemo>>();
function spoken(text: string): ReturnType<typeof speakDemo> {
  let hit = rendered.get(text);
  if (!hit) rendered.set(text, (hit = speakDemo(text, RATE)));
  return hit;
}

const textOf = (segments: Segment[]) => segments.map((s) => s.text).join(' ');

/** Phrases separated by silences; returns the audio and each phrase's start (first symbol) in seconds. */
function phrasesWithSilence(phrases: string[], silences: number[]): { samples: Float32Array; starts: number[] } {
  const parts: Float32Array[] = [];
  const starts: number[] = [];
  let at = 0;
  phrases.forEach((phrase, i) => {
    const voice = spoken(phrase);
    starts.push(at + voice.symbols[0]!.start);
    const silence = new Float32Array(Math.round((silences[i % silences.length] ?? 1) * RATE));
    parts.push(voice.samples, silence);
    at += (voice.samples.length + silence.length) / RATE;
  });
  const samples = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const p of parts) (samples.set(p, offset), (offset += p.length));
  return { samples, starts };
}

/** Seeded texts over the demo alphabet with single spaces between words. */
function randomTexts(count: number): string[] {
  let seed = 2024;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  return Array.from({ length: count }, () => {
    const chars = Array.from({ length: 3 + Math.floor(next() * 25) }, () => DEMO_SYMBOLS[Math.floor(next() * DEMO_SYMBOLS.length)]!);
    return chars.join('').replace(/ +/g, ' ').trim() || 'a';
  });
}

beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-ctc-'));
  await generateCtcModels(root);
  for (const engine of ['ctc-wav2vec2', 'ctc-nemo'] as const) runners.set(engine, await load(engine, path.join(root, engine)));
});

afterAll(async () => {
  for (const runner of runners.values()) await runner.close();
  fs.rmSync(root, { recursive: true, force: true });
});

describe.each(['ctc-wav2vec2', 'ctc-nemo'] as const)('CTC runner (%s demo model)', (engine) => {
  const runner = () => runners.get(engine)!;

  it('transcribes the demo voice exactly: every symbol, repeated letters, ɛ ɔ ɲ ŋ', async () => {
    const texts = ['abcdeɛfg hijklmnɲŋ oɔprstuwyz', 'kkaa nn', 'ŋŋŋ ɲɲ ɔɔ ɛɛ', 'i ni ce', 'ne bɛ taa sugu la', 'a', 'baara bɛ sɔrɔ ɲɔgɔn fɛ'];
    for (const text of texts) expect(textOf(await transcribe(runner(), spoken(text).samples))).toBe(text);
  });

  it('transcribes 16 seeded random texts over the demo alphabet exactly', async () => {
    const wrong: string[] = [];
    for (const text of randomTexts(16)) {
      const got = textOf(await transcribe(runner(), spoken(text).samples));
      if (got !== text) wrong.push(`${text} → ${got}`);
    }
    expect(wrong).toEqual([]);
  });

  it('recognises the demo voice rendered at 24 kHz and resampled to 16 kHz, as TTS output would arrive', async () => {
    const samples = await resample(speakDemo('kkaa ɲɔgɔn', 24000).samples, 24000, RATE);
    expect(textOf(await transcribe(runner(), samples))).toBe('kkaa ɲɔgɔn');
  });

  it('times every token within one 20 ms frame of the symbol speakDemo rendered', async () => {
    // One letter per word, so each word's times are exactly one token's times.
    const letters = DEMO_SYMBOLS.filter((s) => s !== ' ');
    const { samples, symbols } = spoken(letters.join(' '));
    const words = (await transcribe(runner(), samples)).flatMap((s) => s.words);
    const letterSymbols = symbols.filter((s) => s.symbol !== ' ');
    expect(words.map((w) => w.text)).toEqual(letters);
    words.forEach((word, i) => {
      expect(Math.abs(word.start - letterSymbols[i]!.start)).toBeLessThanOrEqual(FRAME + 1e-9);
      expect(Math.abs(word.end - letterSymbols[i]!.end)).toBeLessThanOrEqual(FRAME + 1e-9);
    });
  });

  it('times multi-letter words from their first to their last symbol', async () => {
    const { samples, symbols } = spoken('ne bɛ taa sugu la');
    const [segment] = await transcribe(runner(), samples);
    const letterSymbols = symbols.filter((s) => s.symbol !== ' ');
    let next = 0;
    for (const word of segment!.words) {
      const first = letterSymbols[next]!;
      const last = letterSymbols[next + [...word.text].length - 1]!;
      next += [...word.text].length;
      expect(Math.abs(word.start - first.start)).toBeLessThanOrEqual(FRAME + 1e-9);
      expect(Math.abs(word.end - last.end)).toBeLessThanOrEqual(FRAME + 1e-9);
    }
    expect(segment!.start).toBe(segment!.words[0]!.start);
    expect(segment!.end).toBe(segment!.words.at(-1)!.end);
  });

  it('starts a new segment after a long pause and keeps short pauses in one segment', async () => {
    // The third phrase opens with a spoken space (a word delimiter), as a speaker's next word would.
    const { samples, starts } = phrasesWithSilence(['i ni ce', 'a ka kɛnɛ', ' sugu'], [1, 0.2]);
    const segments = await transcribe(runner(), samples);
    expect(segments.map((s) => s.text)).toEqual(['i ni ce', 'a ka kɛnɛ sugu']);
    expect(Math.abs(segments[1]!.start - starts[1]!)).toBeLessThanOrEqual(FRAME + 1e-9);
  });

  it('yields nothing for silence, empty or too-short audio', async () => {
    expect(await transcribe(runner(), new Float32Array(RATE))).toEqual([]);
    expect(await transcribe(runner(), new Float32Array(0))).toEqual([]);
    expect(await transcribe(runner(), new Float32Array(100))).toEqual([]);
  });

  it('cuts audio longer than maxChunkSeconds at VAD silences and keeps absolute times', async () => {
    const phrases = ['i ni ce', 'ne bɛ taa sugu la', 'a ka kɛnɛ', 'kkaa nn', 'tubabu kan', 'baara ka ca'];
    const { samples, starts } = phrasesWithSilence(phrases, [1, 1.4, 0.8]);
    expect(samples.length / RATE).toBeGreaterThan(12);
    const chunked = await load(engine, path.join(root, engine), { maxChunkSeconds: 4 });
    let checkpoints = 0;
    const segments = await transcribe(
      chunked,
      samples,
      context(async () => void checkpoints++),
    );
    await chunked.close();
    expect(segments.map((s) => s.text)).toEqual(phrases);
    segments.forEach((s, i) => expect(Math.abs(s.start - starts[i]!)).toBeLessThanOrEqual(FRAME + 1e-9));
    expect(checkpoints).toBeGreaterThanOrEqual(4);
  });

  it('stops when a checkpoint throws (cancellation)', async () => {
    const { samples } = phrasesWithSilence(['i ni ce', 'a ka kɛnɛ'], [1]);
    const cancelled = await load(engine, path.join(root, engine), { maxChunkSeconds: 2 });
    const ctx = context(async () => {
      throw new Error('cancelled');
    });
    await expect(transcribe(cancelled, samples, ctx)).rejects.toThrow('cancelled');
    await cancelled.close();
  });

  it('reports its layout and rejects unknown methods', () => {
    expect(runner().info()).toMatchObject({ engine, sampleRate: RATE, frameSeconds: FRAME });
    expect(() => runner().call('translate', {}, context())).toThrow(/no method translate/);
    expect(() => runner().call('transcribe', { samples: [1, 2] }, context())).toThrow();
  });
});

describe('CTC runner configuration', () => {
  it('reads the blank from config.json: the last id ([PAD]) of the wav2vec2 vocab', () => {
    const vocab = JSON.parse(fs.readFileSync(path.join(root, 'ctc-wav2vec2', 'vocab.json'), 'utf8')) as Record<string, number>;
    expect(runners.get('ctc-wav2vec2')!.info()).toMatchObject({ blank: vocab['[PAD]'], vocabSize: Object.keys(vocab).length });
    expect(vocab['[PAD]']).toBe(Object.keys(vocab).length - 1);
  });

  it('takes NeMo preprocessing from model_config.json and the subsampling from it', () => {
    expect(runners.get('ctc-nemo')!.info()).toMatchObject({ normalize: 'NA', nMels: 64, subsampling: 2 });
  });

  it('measures the NeMo subsampling on a probe run when no config states it', async () => {
    // A bare export: model.onnx without metadata_props and tokens.txt; normalisation given as an option.
    const dir = fs.mkdtempSync(path.join(root, 'nemo-bare-'));
    const model = onnx.ModelProto.decode(fs.readFileSync(path.join(root, 'ctc-nemo', 'model.onnx')));
    model.metadataProps = [];
    fs.writeFileSync(path.join(dir, 'model.onnx'), onnx.ModelProto.encode(model).finish());
    fs.copyFileSync(path.join(root, 'ctc-nemo', 'tokens.txt'), path.join(dir, 'tokens.txt'));
    const bare = await load('ctc-nemo', dir, { normalize: 'NA' });
    expect(bare.info()).toMatchObject({ normalize: 'NA', nMels: 64, subsampling: 2, frameSeconds: FRAME });
    expect(textOf(await transcribe(bare, spoken('kkaa nn').samples))).toBe('kkaa nn');
    await bare.close();
  });

  it('generates the same bytes on every run', async () => {
    const again = fs.mkdtempSync(path.join(root, 'again-'));
    await generateCtcModels(again);
    for (const engine of ['ctc-wav2vec2', 'ctc-nemo']) {
      for (const file of fs.readdirSync(path.join(root, engine))) {
        expect(fs.readFileSync(path.join(again, engine, file)).equals(fs.readFileSync(path.join(root, engine, file))), file).toBe(true);
      }
    }
  });

  it('serves transcribe from a worker thread through the ModelEngine', async () => {
    const dir = path.join(root, 'ctc-wav2vec2');
    const engine = new ModelEngine(
      { id: 'sunjata-1', aliases: [], engine: 'ctc-wav2vec2', dir, absoluteDir: dir, replicas: 1, maxQueue: 2, options: {} },
      { intraOpThreads: 1, interOpThreads: 1 },
    );
    await engine.start();
    try {
      const segments: Segment[] = [];
      for await (const s of engine.stream<Segment>('transcribe', { samples: spoken('i ni ce').samples })) segments.push(s);
      expect(textOf(segments)).toBe('i ni ce');
    } finally {
      await engine.close();
    }
  });
});

describe('CTC runner load errors', () => {
  function copyWithout(engine: string, missing: string): string {
    const dir = fs.mkdtempSync(path.join(root, `broken-${engine}-`));
    for (const f of fs.readdirSync(path.join(root, engine))) if (f !== missing) fs.copyFileSync(path.join(root, engine, f), path.join(dir, f));
    return dir;
  }

  it('names a model directory that does not exist', async () => {
    await expect(load('ctc-wav2vec2', path.join(root, 'nope'))).rejects.toThrow(/directory does not exist/);
  });

  it('names the missing sidecar or model file', async () => {
    await expect(load('ctc-wav2vec2', copyWithout('ctc-wav2vec2', 'vocab.json'))).rejects.toThrow(/missing vocab\.json/);
    await expect(load('ctc-wav2vec2', copyWithout('ctc-wav2vec2', 'config.json'))).rejects.toThrow(/missing config\.json/);
    await expect(load('ctc-nemo', copyWithout('ctc-nemo', 'tokens.txt'))).rejects.toThrow(/missing tokens\.txt/);
    await expect(load('ctc-wav2vec2', copyWithout('ctc-wav2vec2', 'model.onnx'))).rejects.toThrow(
      /no model file \(looked for model\.onnx, onnx\/model\.onnx\)/,
    );
  });

  it('rejects a model of the other layout with the missing inputs named', async () => {
    const dir = copyWithout('ctc-nemo', 'model.onnx');
    fs.copyFileSync(path.join(root, 'ctc-wav2vec2', 'model.onnx'), path.join(dir, 'model.onnx'));
    await expect(load('ctc-nemo', dir)).rejects.toThrow(/missing inputs audio_signal, length/);
  });

  it('rejects a wrong rank, a wrong dtype and too few output classes', async () => {
    /** A wav2vec2 directory whose model.onnx maps `input_values` to `logits` through `body`. */
    const variant = (type: 'float' | 'int64', dims: Array<number | string>, body: (g: GraphBuilder, x: string) => string, outDims: Array<number | string>) => {
      const g = new GraphBuilder('bad');
      g.op('Identity', [body(g, g.input('input_values', type, dims))], {}, 'logits');
      g.output('logits', 'float', outDims);
      const dir = copyWithout('ctc-wav2vec2', 'model.onnx');
      fs.writeFileSync(path.join(dir, 'model.onnx'), g.toBytes());
      return dir;
    };
    const same = (_: GraphBuilder, x: string) => x;
    await expect(load('ctc-wav2vec2', variant('float', ['b', 'n', 'c'], same, ['b', 'n', 'c']))).rejects.toThrow(/input input_values has rank 3, expected 2/);
    const cast = (g: GraphBuilder, x: string) => g.op('Cast', [x], { to: { i: 1 } });
    await expect(load('ctc-wav2vec2', variant('int64', ['b', 'n'], cast, ['b', 'n']))).rejects.toThrow(/input input_values is int64, expected float32/);
    await expect(load('ctc-wav2vec2', variant('float', ['b', 'n'], same, ['b', 'n']))).rejects.toThrow(/output logits has rank 2, expected 3/);
    const oneClass = (g: GraphBuilder, x: string) => g.op('Unsqueeze', [x, g.int64s([-1])]);
    await expect(load('ctc-wav2vec2', variant('float', ['b', 'n'], oneClass, ['b', 'n', 1]))).rejects.toThrow(
      /logits has 1 classes but vocab\.json has 30 tokens/,
    );
  });
});
