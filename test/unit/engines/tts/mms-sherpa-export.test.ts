/**
 * The sherpa-onnx MMS-TTS export (willwade/mms-tts-multilingual-models-onnx, folder bam: what the bambara
 * pack installs for jifili-1) loads through the `vits-sherpa` engine as it is, no adapter: the stand-in has
 * exactly its inputs (x, x_length, noise_scale, length_scale, noise_scale_w; no sid), output y [N,1,L],
 * metadata_props (n_speakers 0, add_blank 1, sample_rate 16000, frontend characters) and tokens.txt format
 * (the pad `|` as id 0, capitals on their letter's id), and speaks the demo voice so every sample is known.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoLengths } from '../../../../models/generator/demo-vits-graph.js';
import { speakDemo } from '../../../../models/generator/demo-voice.js';
import { EngineCancelledError } from '../../../../src/engines/errors.js';
import { ModelEntrySchema } from '../../../../src/engines/manifest.js';
import { readModelMetadata } from '../../../../src/engines/onnx/model-metadata.js';
import type { Runner, RunnerContext } from '../../../../src/engines/runner.js';
import { createVitsRunner, type SpeechChunk } from '../../../../src/engines/tts/vits-runner.js';
import { loadVitsLayout } from '../../../../src/engines/tts/vits-layouts.js';
import { guessEngine } from '../../../../src/models-hub/guess-engine.js';
import { MMS_STANDIN_SYMBOLS, writeStandInRepos } from '../../../fixtures/bambara-standin.js';

let root = '';
let dir = '';
let runner: Runner;

const ctx: RunnerContext = {
  signal: new AbortController().signal,
  async checkpoint() {
    await new Promise((resolve) => setImmediate(resolve));
    if (this.signal.aborted) throw new EngineCancelledError();
  },
};

async function speak(text: string, extra: Record<string, unknown> = {}): Promise<SpeechChunk[]> {
  const chunks: SpeechChunk[] = [];
  for await (const chunk of runner.call('synthesize', { text, ...extra }, ctx) as AsyncIterable<SpeechChunk>) chunks.push(chunk);
  return chunks;
}

beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-mms-sherpa-'));
  dir = path.join((await writeStandInRepos(root)).mms, 'bam');
  runner = await createVitsRunner({ entry: ModelEntrySchema.parse({ id: 'jifili-1', engine: 'vits-sherpa', dir }), dir, intraOpThreads: 1, interOpThreads: 1 });
}, 60_000);
afterAll(async () => {
  await runner?.close();
  fs.rmSync(root, { recursive: true, force: true });
});

describe('the sherpa-onnx MMS export of bam', () => {
  it('has the export script’s metadata and token lines', () => {
    expect(readModelMetadata(path.join(dir, 'model.onnx'))).toEqual({
      model_type: 'vits',
      comment: 'mms',
      url: 'https://huggingface.co/facebook/mms-tts/tree/main',
      add_blank: '1',
      language: 'unknown',
      frontend: 'characters',
      n_speakers: '0',
      sample_rate: '16000',
    });
    const lines = fs.readFileSync(path.join(dir, 'tokens.txt'), 'utf8').split('\n');
    expect(lines.slice(0, 5)).toEqual(['| 0', "' 1", '- 2', 'ɲ 3', 'Ɲ 3']);
    expect(lines).toContain(`  ${MMS_STANDIN_SYMBOLS.indexOf(' ')}`);
    expect(lines).toContain(`Ɛ ${MMS_STANDIN_SYMBOLS.indexOf('ɛ')}`);
  });

  it('is recognised as vits-sherpa and binds its inputs without a speaker id', () => {
    expect(guessEngine(dir)).toMatchObject({ engine: 'vits-sherpa', options: {} });
    const layout = loadVitsLayout('vits-sherpa', dir, {});
    expect({ sampleRate: layout.sampleRate, speakers: layout.speakers }).toEqual({ sampleRate: 16000, speakers: 1 });
    expect(layout.bind(['x', 'x_length', 'noise_scale', 'length_scale', 'noise_scale_w'])).toMatchObject({
      required: ['x', 'x_length', 'noise_scale', 'length_scale', 'noise_scale_w'],
      output: 'y',
      speaker: undefined,
    });
    // Blank `|` (id 0) between the ids, capitals through their own lines.
    const id = (c: string) => MMS_STANDIN_SYMBOLS.indexOf(c);
    expect(layout.tokenize('Ɛa').ids).toEqual([0, id('ɛ'), 0, id('a'), 0]);
    expect(layout.characters).not.toContain('|');
  });

  it('speaks through the vits-sherpa runner at 16 kHz, sample for sample the demo voice', async () => {
    expect(runner.info()).toMatchObject({ engine: 'vits-sherpa', sampleRate: 16000, speakers: 1 });
    const [chunk, ...rest] = await speak('Ɲɔgɔn ka ŋɛ');
    expect(rest).toEqual([]);
    const expected = speakDemo('ɲɔgɔn ka ŋɛ', 16000).samples;
    expect(chunk!.samples.length).toBe(expected.length);
    let worst = 0;
    for (let i = 0; i < expected.length; i++) worst = Math.max(worst, Math.abs(chunk!.samples[i]! - expected[i]!));
    expect(worst).toBeLessThanOrEqual(1e-6);
  });

  it('takes the length scale (sherpa exports keep it as an input) and gives an apostrophe a silent slot', async () => {
    const { symbol, gap } = demoLengths(16000);
    const [slow] = await speak('aa', { lengthScale: 2 });
    expect(slow!.samples.length).toBe(2 * (gap + 2 * (symbol + gap)));
    const [quoted] = await speak("a'a");
    expect(quoted!.samples.length).toBe(gap + 3 * (symbol + gap));
  });
});
