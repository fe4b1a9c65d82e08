/**
 * Stateful CTC streaming (ctc-stream.ts, runner method `stream`):
 * - the streaming log-mels equal nemoLogMel of the whole audio, bit for bit, for any split of the audio;
 * - through the CTC runner in worker threads (two replicas, so a turn's pieces land on either): for random
 *   audio up to 60 s (past the reduced QuartzNet's ±7 s receptive field), split into random pieces and ended
 *   (the final piece) at a random point, the frames of all pieces are the frames of one whole run (`frames`),
 *   in order, whatever replica ran each piece;
 * - models that cannot stream say why (per_feature normalisation), and refuse the method and foreign states.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineRegistry } from '../../../../src/engines/engine-registry.js';
import { DEFAULT_NEMO_FEATURES, nemoLogMel, type NemoFeatureConfig } from '../../../../src/engines/asr/nemo-features.js';
import { LogMelStream, logMelStreamRefusal } from '../../../../src/engines/asr/nemo-features-stream.js';
import type { ModelEngine } from '../../../../src/engines/runtime/model-engine.js';
import { toneBursts, writeReducedQuartzNet } from './helpers/reduced-quartznet.js';

const RUNS = Number(process.env.KUMA_PROPERTY_RUNS ?? 8);
const RATE = 16_000;

/** Splits `total` into pieces of `sizes` (cycled), stopping before `end` (the rest is the final piece). */
function pieces(total: number, end: number, sizes: number[]): [number, number][] {
  const out: [number, number][] = [];
  let at = 0;
  for (let i = 0; at + sizes[i % sizes.length]! < Math.min(total, end); i++) out.push([at, (at += sizes[i % sizes.length]!)]);
  out.push([at, total]);
  return out;
}

const sizes = fc.array(fc.oneof(fc.constantFrom(160, 320, 8000, 16000, 64000), fc.integer({ min: 1, max: 40_000 })), { minLength: 1, maxLength: 6 });

describe('streaming NeMo log-mels', () => {
  const configs: [string, NemoFeatureConfig][] = [
    ['QuartzNet (window 320)', { ...DEFAULT_NEMO_FEATURES, normalize: 'NA', winLength: 320 }],
    ['window 400, no pre-emphasis, 80 mels', { ...DEFAULT_NEMO_FEATURES, normalize: 'NA', preemph: 0, nMels: 80 }],
  ];
  for (const [name, config] of configs) {
    it(`${name}: equal to nemoLogMel of the whole audio for any split`, () => {
      const stream = new LogMelStream(config);
      fc.assert(
        fc.property(fc.integer({ min: 0, max: 48_000 }), sizes, fc.integer({ min: 0, max: 1e9 }), (length, pieceSizes, seed) => {
          const audio = toneBursts(length, seed);
          const whole = nemoLogMel(audio, config);
          let state = stream.initial();
          const columns: Float32Array[] = [];
          for (const [from, to] of pieces(length, length, pieceSizes)) {
            const piece = stream.push(state, audio.subarray(from, to), to === length);
            expect(piece.firstFrame).toBe(columns.length);
            for (let t = 0; t < piece.frames; t++) columns.push(Float32Array.from({ length: config.nMels }, (_, m) => piece.data[m * piece.frames + t]!));
            state = piece.state;
          }
          expect(columns.length).toBe(whole.validFrames);
          columns.forEach((column, t) => expect(Array.from(column)).toEqual(Array.from({ length: config.nMels }, (_, m) => whole.data[m * whole.frames + t]!)));
        }),
        { numRuns: RUNS * 2, seed: 20261128 },
      );
    });
  }

  it('refuses what needs the whole utterance or mirrors its start', () => {
    expect(logMelStreamRefusal({ ...DEFAULT_NEMO_FEATURES, normalize: 'per_feature' })).toBe('normalize per_feature uses whole-utterance statistics');
    expect(logMelStreamRefusal({ ...DEFAULT_NEMO_FEATURES, normalize: 'NA', padMode: 'reflect' })).toBe('stft pad mode reflect');
    expect(logMelStreamRefusal({ ...DEFAULT_NEMO_FEATURES, normalize: 'NA' })).toBeNull();
  });
});

describe('the CTC runner streams a convolutional NeMo model statefully', () => {
  let root: string;
  let engines: EngineRegistry;
  let engine: ModelEngine;
  beforeAll(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-ctc-stream-'));
    writeReducedQuartzNet(path.join(root, 'quartznet'));
    const models = [
      { id: 'quartznet', engine: 'ctc-nemo', dir: 'quartznet', replicas: 2, maxQueue: 64 },
      { id: 'quartznet-normalized', engine: 'ctc-nemo', dir: 'quartznet', replicas: 1, options: { normalize: 'per_feature' } },
    ];
    fs.writeFileSync(path.join(root, 'manifest.json'), JSON.stringify({ models }));
    engines = EngineRegistry.fromManifest(path.join(root, 'manifest.json'), 'test', { intraOpThreads: 1, interOpThreads: 1 });
    await engines.start();
    engine = engines.get('quartznet')!;
  }, 120_000);
  afterAll(async () => {
    await engines?.close();
    fs.rmSync(root, { recursive: true, force: true });
  });

  interface Step {
    ids: Int32Array;
    firstFrame: number;
    blank: number;
    state: unknown;
  }

  it('says it streams statefully, and a per_feature model says why it does not', () => {
    // C1 reads 16 frames ahead, each block's sub-blocks 2 × (16+19+25+31+37) at half rate, C2 86 at half rate.
    expect(engine.info).toMatchObject({ stateful: true, statefulLookaheadSeconds: (16 + 2 * 2 * (16 + 19 + 25 + 31 + 37) + 2 * 86) / 100 });
    expect(engines.get('quartznet-normalized')!.info).toMatchObject({
      stateful: false,
      statefulRefusal: 'normalize per_feature uses whole-utterance statistics',
    });
  });

  it("the pieces' frames, ended at any point, are the whole run's frames", async () => {
    const lengths = fc.oneof(
      fc.integer({ min: 0, max: 2 * RATE }),
      fc.integer({ min: 2 * RATE, max: 20 * RATE }),
      fc.integer({ min: 20 * RATE, max: 60 * RATE }),
    );
    await fc.assert(
      fc.asyncProperty(
        lengths,
        sizes,
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.integer({ min: 0, max: 1e9 }),
        async (length, pieceSizes, endAt, seed) => {
          const audio = toneBursts(length, seed);
          const whole = await engine.run<{ ids: Int32Array }>('frames', { samples: audio.slice(), skip: 0, take: null });
          let state: unknown = null;
          const ids: number[] = [];
          // Pieces run one after another, each going to whichever replica is free, as a realtime turn's do.
          for (const [from, to] of pieces(length, Math.round(endAt * length), pieceSizes)) {
            const step = await engine.run<Step>('stream', { samples: audio.slice(from, to), state, final: to === length });
            expect(step.firstFrame).toBe(ids.length);
            expect(step.blank).toBe(12);
            ids.push(...step.ids);
            state = step.state;
          }
          expect(ids).toEqual(Array.from(whole.ids));
        },
      ),
      { numRuns: RUNS, seed: 20261128 },
    );
  }, 240_000);

  it('refuses a model that cannot stream, and a state that is not this model’s', async () => {
    const samples = toneBursts(RATE, 1);
    await expect(engines.get('quartznet-normalized')!.run('stream', { samples, state: null, final: true })).rejects.toThrow(
      /does not stream statefully \(normalize per_feature/,
    );
    const first = await engine.run<Step>('stream', { samples: samples.slice(), state: null, final: false });
    const foreign = { ...(first.state as object), caches: [new Float32Array(3)] };
    await expect(engine.run('stream', { samples: samples.slice(), state: foreign, final: true })).rejects.toThrow(/stream state has 1 caches/);
  });
});
