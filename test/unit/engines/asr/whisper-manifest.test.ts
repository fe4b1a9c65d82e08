/**
 * `sunjata-1` is served by the Whisper runner or by a CTC runner by the manifest alone: two manifests that
 * differ only in the entry's engine and directory (both pointing into the generated demo pack), an
 * EngineRegistry from each, and the very same `transcribe` call answered by both through their worker
 * threads with segments of the same shape.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineRegistry } from '../../../../src/engines/engine-registry.js';
import { DEFAULT_DEMO_DIR } from '../../../../models/generator/generate-demo-pack.js';
import { speakDemo } from '../../../../models/generator/demo-voice.js';

interface Segment {
  start: number;
  end: number;
  text: string;
  words: unknown[];
}

const RATE = 16000;
let dir: string;

function manifest(name: string, entry: Record<string, unknown>): string {
  const file = path.join(dir, `${name}.json`);
  fs.writeFileSync(file, JSON.stringify({ models: [{ id: 'sunjata-1', aliases: ['whisper-1'], maxQueue: 4, ...entry }] }));
  return file;
}

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-asr-manifest-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('sunjata-1 by manifest alone', () => {
  // 'i ka kɛnɛ wa' in the demo voice lasts 1.75 s: the CTC demo spells it out, and the Whisper demo says its
  // phrase for a region of 1–2 s, which is the same text.
  const voice = speakDemo('i ka kɛnɛ wa', RATE);
  const samples = new Float32Array(4 * RATE);
  samples.set(voice.samples, RATE / 2);
  const speechStart = 0.5 + voice.symbols[0]!.start;
  const speechEnd = 0.5 + voice.symbols.at(-1)!.end;

  it.each([
    ['whisper', { engine: 'whisper', dir: path.join(DEFAULT_DEMO_DIR, 'whisper'), options: { language: 'bm' } }],
    ['ctc-wav2vec2', { engine: 'ctc-wav2vec2', dir: path.join(DEFAULT_DEMO_DIR, 'ctc-wav2vec2') }],
  ])(
    'the %s manifest serves the same transcribe call',
    async (engine, entry) => {
      const registry = EngineRegistry.fromManifest(manifest(engine, entry), 'djelia', { intraOpThreads: 1, interOpThreads: 1 });
      try {
        await registry.start();
        const model = registry.get('whisper-1')!;
        expect(model.entry.id).toBe('sunjata-1');
        expect(model.info.engine).toBe(engine);
        const segments: Segment[] = [];
        for await (const segment of model.stream<Segment>('transcribe', { samples, temperature: 0 })) segments.push(segment);
        expect(segments.map((s) => s.text)).toEqual(['i ka kɛnɛ wa']);
        const [segment] = segments as [Segment];
        expect(Math.abs(segment.start - speechStart)).toBeLessThanOrEqual(0.03);
        expect(Math.abs(segment.end - speechEnd)).toBeLessThanOrEqual(0.03);
        expect(Array.isArray(segment.words)).toBe(true);
      } finally {
        await registry.close();
      }
    },
    60_000,
  );
});
