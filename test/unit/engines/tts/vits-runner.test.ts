/**
 * The VITS runner on the demo models in all three export layouts (HF/MMS, sherpa-onnx, Piper): exact
 * waveform lengths and content (the demo voice), per-layout tokenisation, phrase streaming, cancellation,
 * and the load-time errors a real operator would hit.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateVitsModels, sherpaDemoFiles, DEMO_SHERPA_SPEAKER_GAINS } from '../../../../models/generator/demo-vits.js';
import { demoLengths } from '../../../../models/generator/demo-vits-graph.js';
import { renderSymbol, symbolIndex } from '../../../../models/generator/demo-voice.js';
import { EngineCancelledError } from '../../../../src/engines/errors.js';
import { ModelEntrySchema, type EngineType, type ModelEntry } from '../../../../src/engines/manifest.js';
import type { Runner, RunnerContext } from '../../../../src/engines/runner.js';
import { ModelEngine } from '../../../../src/engines/runtime/model-engine.js';
import { createVitsRunner, type SpeechChunk, type SynthesizeInput } from '../../../../src/engines/tts/vits-runner.js';
import { loadVitsLayout } from '../../../../src/engines/tts/vits-layouts.js';

let root = '';
const runners: Record<string, Runner> = {};

/** A manifest entry with the schema's defaults, as the manifest loader makes them. */
const entryFor = (engine: EngineType, dir: string): ModelEntry => ModelEntrySchema.parse({ id: 'tts', engine, dir });

function load(engine: EngineType, dir: string): Promise<Runner> {
  return createVitsRunner({ entry: entryFor(engine, dir), dir, intraOpThreads: 1, interOpThreads: 1 });
}

function context(signal = new AbortController().signal): RunnerContext {
  return {
    signal,
    async checkpoint() {
      await new Promise((resolve) => setImmediate(resolve));
      if (signal.aborted) throw new EngineCancelledError();
    },
  };
}

async function speak(runner: Runner, input: SynthesizeInput, ctx = context()): Promise<SpeechChunk[]> {
  const chunks: SpeechChunk[] = [];
  for await (const chunk of runner.call('synthesize', input, ctx) as AsyncIterable<SpeechChunk>) chunks.push(chunk);
  return chunks;
}

/** A copy of a generated layout to break in one test. */
function copyLayout(name: string): string {
  const dir = fs.mkdtempSync(path.join(root, `${name}-`));
  fs.cpSync(path.join(root, name), dir, { recursive: true });
  return dir;
}

type Sound = number | 'unk'; // a demo symbol index, or sherpa's <unk>

/** Demo symbols of a text, lowercased; unknown characters dropped or kept as <unk>. */
function sounds(text: string, unknown: 'drop' | 'unk'): Sound[] {
  return [...text.toLowerCase()].flatMap((c): Sound[] => (symbolIndex(c) >= 0 ? [symbolIndex(c)] : unknown === 'unk' ? ['unk'] : []));
}

/** Round half to even on a float32 product, as ONNX Round does on the graph's float32 tensors. */
function onnxRound(x: number): number {
  const f = Math.floor(x);
  return x - f === 0.5 ? (f % 2 === 0 ? f : f + 1) : Math.round(x);
}

/** Linear resize with half_pixel coordinates (ONNX Resize, mode linear), edges clamped. */
function resizeLinear(src: Float32Array, size: number): Float32Array {
  const out = new Float32Array(size);
  const scale = Math.fround(size / src.length);
  for (let x = 0; x < size; x++) {
    const at = Math.min(Math.max((x + 0.5) / scale - 0.5, 0), src.length - 1);
    const i = Math.floor(at);
    const f = at - i;
    out[x] = src[i]! * (1 - f) + src[Math.min(i + 1, src.length - 1)]! * f;
  }
  return out;
}

/**
 * The duration rule of the demo models: blank, then (token, blank) per token; a symbol lasts
 * DEMO_SYMBOL_SECONDS (renderSymbol), a blank DEMO_GAP_SECONDS and <unk> DEMO_SYMBOL_SECONDS (silent), at
 * the model's rate; a length scale s multiplies every duration (rounded half to even) and resamples each
 * symbol linearly; a speaker multiplies everything by its gain.
 */
function expectedSpeech(seq: Sound[], rate: number, { scale = 1, gain = 1 } = {}): Float32Array {
  const { symbol, gap } = demoLengths(rate);
  const s = Math.fround(scale);
  const [symbolLen, gapLen] = scale === 1 ? [symbol, gap] : [onnxRound(Math.fround(symbol * s)), onnxRound(Math.fround(gap * s))];
  const out = new Float32Array(gapLen + seq.length * (symbolLen + gapLen));
  let at = gapLen;
  for (const sound of seq) {
    if (sound !== 'unk') {
      const row = renderSymbol(sound, rate);
      out.set(scale === 1 ? row : resizeLinear(row, symbolLen), at);
    }
    at += symbolLen + gapLen;
  }
  return out.map((v) => Math.fround(v * gain));
}

function expectClose(actual: Float32Array, expected: Float32Array, tolerance: number): void {
  expect(actual.length).toBe(expected.length);
  let worst = 0;
  for (let i = 0; i < actual.length; i++) worst = Math.max(worst, Math.abs(actual[i]! - expected[i]!));
  expect(worst).toBeLessThanOrEqual(tolerance);
}

beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-vits-'));
  await generateVitsModels(root);
  for (const layout of ['hf', 'sherpa', 'piper']) runners[layout] = await load(`vits-${layout}` as EngineType, path.join(root, `vits-${layout}`));
});

afterAll(async () => {
  await Promise.all(Object.values(runners).map((r) => r.close()));
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

describe('VITS runner on the demo models', () => {
  it('reports sample rate, speakers and layout', () => {
    expect(runners.hf!.info()).toMatchObject({ engine: 'vits-hf', layout: 'hf', sampleRate: 16000, speakers: 1, controls: { lengthScale: false } });
    expect(runners.sherpa!.info()).toMatchObject({ engine: 'vits-sherpa', layout: 'sherpa', sampleRate: 22050, speakers: 5, controls: { speaker: true } });
    expect(runners.piper!.info()).toMatchObject({ engine: 'vits-piper', layout: 'piper', sampleRate: 22050, speakers: 1, controls: { lengthScale: true } });
  });

  it.each([
    ['hf', 16000],
    ['sherpa', 22050],
    ['piper', 22050],
  ] as const)('%s speaks each symbol as the demo voice, with blanks between, at %i Hz', async (layout, rate) => {
    const [chunk, ...rest] = await speak(runners[layout]!, { text: 'Aw ni ce' });
    expect(rest).toEqual([]);
    const { symbol, gap } = demoLengths(rate);
    expect(chunk!.samples.length).toBe(gap + 8 * (symbol + gap));
    expect(chunk).toMatchObject({ sampleRate: rate, text: 'Aw ni ce', characters: 8 });
    expectClose(chunk!.samples, expectedSpeech(sounds('aw ni ce', 'drop'), rate), 1e-6);
  });

  it('hf: a chunk with nothing to say (punctuation only) charges its characters to the spoken chunk before it', async () => {
    const chunks = await speak(runners.hf!, { text: 'I ka kɛnɛ wa? !!' });
    expect(chunks.map((c) => [c.text, c.characters])).toEqual([['I ka kɛnɛ wa?', 16]]);
    expectClose(chunks[0]!.samples, expectedSpeech(sounds('i ka kɛnɛ wa', 'drop'), 16000), 1e-6);
  });

  it.each(['hf', 'sherpa', 'piper'] as const)(
    '%s reads digits as Bambara number words, and speaks the space where one phrase ends and the next begins',
    async (layout) => {
      const chunks = await speak(runners[layout]!, { text: 'Ɲa 9 ta. 123' });
      expect(chunks.map((c) => [c.text, c.characters])).toEqual([
        ['Ɲa 9 ta.', 9],
        ['123', 3],
      ]);
      const rate = chunks[0]!.sampleRate;
      // The first phrase ends with the voice's space symbol: joined, the phrases still read as separate words.
      expectClose(chunks[0]!.samples, expectedSpeech(sounds('ɲa kɔnɔntɔn ta ', 'drop'), rate), 1e-6);
      expectClose(chunks[1]!.samples, expectedSpeech(sounds('kɛmɛ ni mugan ni saba', 'drop'), rate), 1e-6);
    },
  );

  it('reports the alphabet the voice speaks: the demo letters in both cases, no space, no blank', () => {
    const letters = [...'abcdeɛfghijklmnɲŋoɔprstuwyz'];
    const expected = [...letters, ...letters.map((c) => c.toUpperCase())].sort().join('');
    for (const layout of ['hf', 'sherpa', 'piper'] as const) expect(runners[layout]!.info().alphabet).toBe(expected);
  });

  it('sherpa tokenizer: unknown characters map to <unk>, or are skipped when tokens.txt has none, as sherpa-onnx does', () => {
    const dir = path.join(root, 'vits-sherpa');
    const tokens = new Map(
      fs
        .readFileSync(path.join(dir, 'tokens.txt'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => [l.slice(0, l.lastIndexOf(' ')), Number(l.slice(l.lastIndexOf(' ') + 1))] as const),
    );
    const [a, unk, blank] = [tokens.get('a')!, tokens.get('<unk>')!, tokens.get('_')!];
    expect(loadVitsLayout('vits-sherpa', dir, {}).tokenize('a%a').ids).toEqual([blank, a, blank, unk, blank, a, blank]);
    const bare = copyLayout('vits-sherpa');
    fs.writeFileSync(path.join(bare, 'tokens.txt'), fs.readFileSync(path.join(dir, 'tokens.txt'), 'utf8').replace(/^<unk> \d+\n/m, ''));
    expect(loadVitsLayout('vits-sherpa', bare, {}).tokenize('a%a').ids).toEqual([blank, a, blank, a, blank]);
  });

  it('sherpa applies the speaker gain of sid, and rejects a speaker the voice does not have', async () => {
    const [chunk] = await speak(runners.sherpa!, { text: 'sɔ', speaker: 3 });
    expectClose(chunk!.samples, expectedSpeech(sounds('sɔ', 'drop'), 22050, { gain: DEMO_SHERPA_SPEAKER_GAINS[3] }), 1e-6);
    await expect(speak(runners.sherpa!, { text: 'sɔ', speaker: 5 })).rejects.toThrow('Speaker 5 does not exist: this voice has 5 speakers (0–4)');
    await expect(speak(runners.piper!, { text: 'sɔ', speaker: 1 })).rejects.toThrow('this voice has 1 speaker (0)');
  });

  it.each(['sherpa', 'piper'] as const)('%s length scale stretches every duration and resamples each symbol', async (layout) => {
    const [chunk] = await speak(runners[layout]!, { text: 'bɛ', lengthScale: 1.25 });
    expect(chunk!.samples.length).toBe(3 * 1379 + 2 * 2756); // round(1103·1.25), round(2205·1.25)
    expectClose(chunk!.samples, expectedSpeech(sounds('bɛ', 'drop'), 22050, { scale: 1.25 }), 1e-4);
  });

  it('piper lowercases and decomposes (NFD): tone marks not in phoneme_id_map are skipped, punctuation too', async () => {
    const [chunk] = await speak(runners.piper!, { text: 'Dɔ̀ nà!' });
    expectClose(chunk!.samples, expectedSpeech(sounds('dɔ na', 'drop'), 22050), 1e-6);
  });

  it('streams one chunk per phrase, in order, with characters adding up to the input', async () => {
    const text = 'Aw ni ce, i ka kɛnɛ wa, n teri, ne bɛ taa sugu la sisan. Awɔ, n bɛ na!';
    for (const layout of ['hf', 'sherpa', 'piper'] as const) {
      const chunks = await speak(runners[layout]!, { text });
      expect(chunks.map((c) => c.text)).toEqual(['Aw ni ce,', 'i ka kɛnɛ wa,', 'n teri, ne bɛ taa sugu la sisan.', 'Awɔ, n bɛ na!']);
      expect(chunks.reduce((n, c) => n + c.characters, 0)).toBe(text.length);
      const rate = chunks[0]!.sampleRate;
      // Punctuation is a pause (no sound of its own); each phrase but the last ends with the spoken space.
      chunks.forEach((c, i) => {
        const seq = sounds(`${c.text.replace(/[,.!]/g, '')}${i < chunks.length - 1 ? ' ' : ''}`, 'drop');
        expectClose(c.samples, expectedSpeech(seq, rate), 1e-6);
      });
    }
  });

  it('stops between phrases once the job is aborted', async () => {
    const controller = new AbortController();
    const got: string[] = [];
    const job = runners.piper!.call(
      'synthesize',
      { text: 'Aw ni ce. I ka kɛnɛ wa? Awɔ. N ka kɛnɛ.' },
      context(controller.signal),
    ) as AsyncIterable<SpeechChunk>;
    const run = (async () => {
      for await (const chunk of job) {
        got.push(chunk.text);
        controller.abort();
      }
    })();
    await expect(run).rejects.toBeInstanceOf(EngineCancelledError);
    expect(got).toEqual(['Aw ni ce.']);
  });

  it('rejects text with nothing the voice can pronounce, bad input and unknown methods', async () => {
    await expect(speak(runners.hf!, { text: '... !!' })).rejects.toThrow('nothing this voice can pronounce');
    await expect(speak(runners.piper!, { text: 'i ni ce 😀 x д' })).rejects.toThrow('characters this voice cannot pronounce: "😀", "д"');
    await expect(speak(runners.hf!, { text: 42 } as unknown as SynthesizeInput)).rejects.toThrow('Invalid synthesize input: text');
    await expect(runners.hf!.call('transcribe', {}, context()) as Promise<unknown>).rejects.toThrow('no method transcribe');
  });

  it('loads the sherpa layout whether the lengths input is x_length or x_lengths', async () => {
    const dir = fs.mkdtempSync(path.join(root, 'sherpa-lengths-'));
    for (const [name, content] of Object.entries(sherpaDemoFiles('x_lengths'))) fs.writeFileSync(path.join(dir, name), content);
    const runner = await load('vits-sherpa', dir);
    const [chunk] = await speak(runner, { text: 'a' });
    expectClose(chunk!.samples, expectedSpeech(sounds('a', 'drop'), 22050), 1e-6);
    await runner.close();
  });

  it('runs in a model worker through the engine registry', async () => {
    const dir = path.join(root, 'vits-piper');
    const engine = new ModelEngine({ ...entryFor('vits-piper', dir), absoluteDir: dir }, { intraOpThreads: 1, interOpThreads: 1 });
    try {
      await engine.start();
      expect(engine.info).toMatchObject({ sampleRate: 22050 });
      const chunks: SpeechChunk[] = [];
      for await (const chunk of engine.stream<SpeechChunk>('synthesize', { text: 'Aw ni ce. Awɔ.' })) chunks.push(chunk);
      expect(chunks.map((c) => c.text)).toEqual(['Aw ni ce.', 'Awɔ.']);
      expectClose(chunks[1]!.samples, expectedSpeech(sounds('awɔ', 'drop'), 22050), 1e-6);
    } finally {
      await engine.close();
    }
  });
});

describe('VITS runner load errors', () => {
  it('rejects a Piper voice that needs eSpeak phonemes, clearly', async () => {
    const dir = copyLayout('vits-piper');
    const file = path.join(dir, 'model.onnx.json');
    fs.writeFileSync(file, JSON.stringify({ ...JSON.parse(fs.readFileSync(file, 'utf8')), phoneme_type: 'espeak' }));
    await expect(load('vits-piper', dir)).rejects.toThrow(/phoneme_type "espeak" needs eSpeak-NG phonemization, which Kuma does not do/);
  });

  it.each([
    ['vits-hf', 'vits-hf', 'vocab.json'],
    ['vits-hf', 'vits-hf', 'config.json'],
    ['vits-sherpa', 'vits-sherpa', 'tokens.txt'],
    ['vits-piper', 'vits-piper', 'model.onnx.json'],
    ['vits-piper', 'vits-piper', 'model.onnx'],
  ] as const)('%s names the missing file %s', async (engine, layout, file) => {
    const dir = copyLayout(layout);
    fs.rmSync(path.join(dir, file));
    await expect(load(engine, dir)).rejects.toThrow(file);
  });

  it('names the missing inputs when a model has another layout', async () => {
    const dir = copyLayout('vits-piper');
    fs.copyFileSync(path.join(root, 'vits-hf', 'model.onnx'), path.join(dir, 'model.onnx'));
    await expect(load('vits-piper', dir)).rejects.toThrow('missing inputs input, input_lengths, scales');
  });

  it('rejects a sherpa model without sample_rate metadata', async () => {
    const dir = copyLayout('vits-sherpa');
    fs.copyFileSync(path.join(root, 'vits-hf', 'model.onnx'), path.join(dir, 'model.onnx'));
    await expect(load('vits-sherpa', dir)).rejects.toThrow('no sample_rate in its metadata_props');
  });
});
