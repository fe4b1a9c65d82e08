/**
 * ChunkedTurn on a convolutional model that streams statefully: a reduced-width QuartzNet (the real graph
 * shape, receptive field ±7 s; seeded random weights) in two worker replicas. For random turns up to 45 s
 * fed as a session feeds them — random piece sizes, chunks small or large (a free or a busy model), waiting
 * or not on the piece in flight, silence read ahead after the end, a random holdback — the turn's frames are
 * the frames of one run over the committed turn, whether the final continued the state or (the end came
 * before the audio fed) encoded the turn again. A piece that fails leaves the final exact too: the turn
 * keeps its state (the engine sends a copy), or — had the state gone with the piece — encodes the turn again.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineRegistry } from '../../../src/engines/engine-registry.js';
import { ChunkedTurn, ctcGeometry } from '../../../src/realtime/chunked-turn.js';
import type { SpeechModel } from '../../../src/realtime/session-config.js';
import { toneBursts, writeReducedQuartzNet } from '../engines/asr/helpers/reduced-quartznet.js';

const RUNS = Number(process.env.KUMA_PROPERTY_RUNS ?? 8);
const RATE = 16_000;

let root: string;
let engines: EngineRegistry;
beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-stateful-turn-'));
  writeReducedQuartzNet(path.join(root, 'quartznet'));
  const models = [{ id: 'quartznet', engine: 'ctc-nemo', dir: 'quartznet', replicas: 2, maxQueue: 64 }];
  fs.writeFileSync(path.join(root, 'manifest.json'), JSON.stringify({ models }));
  engines = EngineRegistry.fromManifest(path.join(root, 'manifest.json'), 'test', { intraOpThreads: 1, interOpThreads: 1 });
  await engines.start();
}, 120_000);
afterAll(async () => {
  await engines?.close();
  fs.rmSync(root, { recursive: true, force: true });
});

interface Call {
  method: string;
  fresh: boolean;
  final: boolean;
}

/** The model, its engine wrapped to record the turn's calls and to fail the ones `fail` picks. */
function model(calls: Call[], fail: (call: Call, index: number) => 'refused' | 'failed' | 'detached' | null = () => null): SpeechModel {
  const engine = engines.get('quartznet')!;
  const wrapped = Object.create(engine) as typeof engine;
  wrapped.run = async <T>(method: string, input: unknown, ...rest: unknown[]): Promise<T> => {
    const { state, final } = input as { state: unknown; final: boolean };
    const call = { method, fresh: state === null, final };
    calls.push(call);
    const failure = fail(call, calls.length - 1);
    if (failure === 'refused') throw new Error('queue full');
    if (failure === 'detached') {
      // As if the engine had transferred the state's buffers to a worker that then failed.
      const buffers: ArrayBuffer[] = [
        (state as { features: { tail: Float64Array } }).features.tail.buffer as ArrayBuffer,
        ...(state as { caches: Float32Array[] }).caches.map((c) => c.buffer as ArrayBuffer),
      ];
      structuredClone(buffers, { transfer: buffers.filter((b, i) => buffers.indexOf(b) === i && b.byteLength > 0) });
      throw new Error('worker lost');
    }
    const result = await (engine.run as (...args: unknown[]) => Promise<T>).call(engine, method, input, ...rest);
    if (failure === 'failed') throw new Error('worker lost');
    return result;
  };
  return { id: 'quartznet', engine: wrapped };
}

interface Live {
  ids: Int32Array;
  transcript: string;
  deltas: string[];
}

async function liveTurn(
  speech: Float32Array,
  tail: number,
  plan: { sizes: number[]; eager: boolean[]; waits: boolean[]; holdbackSeconds: number },
  calls: Call[],
  fail?: Parameters<typeof model>[1],
): Promise<Live> {
  const audio = new Float32Array(speech.length + tail);
  audio.set(speech);
  const m = model(calls, fail);
  const geometry = ctcGeometry(m)!;
  const deltas: string[] = [];
  let asked = 0;
  const turn = new ChunkedTurn(
    m,
    { ...geometry, streaming: { ...geometry.streaming, holdbackSeconds: plan.holdbackSeconds } },
    'acct',
    new AbortController().signal,
    (d) => deltas.push(d),
    () => plan.eager[asked++ % plan.eager.length]!,
  );
  let held = 0;
  for (let i = 0; held < audio.length; i++) {
    held = Math.min(audio.length, held + plan.sizes[i % plan.sizes.length]!);
    turn.offer(held, (from, to) => audio.slice(from, to));
    if (plan.waits[i % plan.waits.length]) await turn.settled();
  }
  const transcript = await turn.final(speech);
  return { ids: turn.frameIds, transcript, deltas };
}

async function wholeTurn(speech: Float32Array): Promise<number[]> {
  const result = await engines.get('quartznet')!.run<{ ids: Int32Array }>('frames', { samples: speech.slice(), skip: 0, take: null });
  return Array.from(result.ids);
}

const plan = fc.record({
  sizes: fc.array(fc.oneof(fc.constantFrom(160, 320, 480, 2400, 16000), fc.integer({ min: 1, max: 40_000 })), { minLength: 1, maxLength: 8 }),
  eager: fc.array(fc.boolean(), { minLength: 1, maxLength: 6 }),
  waits: fc.array(fc.boolean(), { minLength: 1, maxLength: 6 }),
  holdbackSeconds: fc.double({ min: 0, max: 1.5, noNaN: true }),
});

describe('ChunkedTurn with a stateful convolutional model', () => {
  it('is stateful', () => {
    expect(ctcGeometry(model([]))!.stateful).toBe(true);
  });

  it("a live turn's frames are the whole committed turn's, continued or encoded again", async () => {
    const outcomes = { continued: 0, again: 0 };
    const lengths = fc.oneof(fc.integer({ min: RATE / 5, max: 5 * RATE }), fc.integer({ min: 5 * RATE, max: 45 * RATE }));
    await fc.assert(
      fc.asyncProperty(lengths, fc.integer({ min: 0, max: 2 * RATE }), plan, fc.integer({ min: 0, max: 1e9 }), async (length, tail, p, seed) => {
        const speech = toneBursts(length, seed);
        const calls: Call[] = [];
        const live = await liveTurn(speech, tail, p, calls);
        expect(Array.from(live.ids)).toEqual(await wholeTurn(speech));
        expect(calls.every((c) => c.method === 'stream')).toBe(true);
        expect(calls.filter((c) => c.final)).toHaveLength(1);
        const again = calls.filter((c) => c.fresh).length > 1;
        outcomes[again ? 'again' : 'continued']++;
        // Frames already sent are final unless the turn was encoded again (then `completed` has the truth).
        if (!again) expect(live.deltas.join('')).toBe(live.transcript);
      }),
      { numRuns: RUNS, seed: 20261128 },
    );
    expect(outcomes.continued).toBeGreaterThan(0);
    expect(outcomes.again).toBeGreaterThan(0);
  }, 240_000);

  it('a failed piece leaves the state as it was; one whose state went with it makes the final encode the turn again', async () => {
    const speech = toneBursts(12 * RATE, 7);
    const steady = { sizes: [3200], eager: [true], waits: [true], holdbackSeconds: 1 };
    const expected = await wholeTurn(speech);
    for (const failure of ['refused', 'failed', 'detached'] as const) {
      const calls: Call[] = [];
      const live = await liveTurn(speech, RATE / 2, steady, calls, (_, index) => (index === 3 ? failure : null));
      expect(Array.from(live.ids)).toEqual(expected);
      // State gone: no more mid-turn pieces, and the final starts again from nothing.
      if (failure === 'detached') expect(calls.slice(4)).toEqual([{ method: 'stream', fresh: true, final: true }]);
      else expect(calls.filter((c) => c.fresh)).toHaveLength(1);
    }
  }, 60_000);
});
