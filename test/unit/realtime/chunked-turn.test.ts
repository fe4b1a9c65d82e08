/**
 * ChunkedTurn, the realtime turn recogniser that encodes a turn in chunks while it is spoken, against the
 * demo CTC models in their worker threads (the manifest the server uses):
 * - the demo round trip is exact through the incremental path: ASR(TTS(text)) fed as a live turn — audio
 *   offered in random piece sizes, chunks small or large at random (a free or a busy model), the turn's end
 *   decided before the audio ends (the silence read ahead) — gives the text's spoken form;
 * - the chunked emissions equal the whole turn's: the frame classes joined from the chunks are the frames one
 *   model run over the whole turn gives (the demo wav2vec2's receptive field fits in the chunk context; the
 *   demo NeMo model streams statefully — new audio only, its state carried — with a random holdback, so
 *   turns whose end comes before the audio fed are encoded again whole);
 * - interims only ever extend: the deltas concatenate to the final transcript.
 * `KUMA_PROPERTY_RUNS` raises the number of random turns (default 8 per model); long turns reach 40 s.
 */
import { getEventListeners } from 'node:events';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resample } from '../../../src/codecs/resample.js';
import { EngineRegistry } from '../../../src/engines/engine-registry.js';
import { ChunkedTurn, ctcGeometry } from '../../../src/realtime/chunked-turn.js';
import type { SpeechModel } from '../../../src/realtime/session-config.js';
import { DEMO_SYMBOLS } from '../../../models/generator/demo-voice.js';

const RUNS = Number(process.env.KUMA_PROPERTY_RUNS ?? 8);
/** One session's signal for every turn of these tests, as a realtime session gives each of its turns. */
const session = new AbortController();
const sessionListeners = () => getEventListeners(session.signal, 'abort').length;
const ASR = ['sunjata-1', 'djelia-asr-v1'] as const;
const LETTERS = DEMO_SYMBOLS.filter((s) => s !== ' ');
const RATE = 16_000;

let engines: EngineRegistry;
beforeAll(async () => {
  engines = EngineRegistry.fromManifest('models/kuma-models.json', 'djelia', { intraOpThreads: 1, interOpThreads: 1 });
  await engines.start();
}, 120_000);
afterAll(() => engines.close());

async function speak(text: string): Promise<Float32Array> {
  const parts: Float32Array[] = [];
  let rate = RATE;
  for await (const chunk of engines.get('jifili-1')!.stream<{ samples: Float32Array; sampleRate: number }>('synthesize', { text })) {
    parts.push(chunk.samples);
    rate = chunk.sampleRate;
  }
  const joined = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  parts.reduce((offset, p) => (joined.set(p, offset), offset + p.length), 0);
  return rate === RATE ? joined : resample(joined, rate, RATE);
}

/** The model, its engine wrapped to record which runner methods the turn called. */
function model(id: string, methods: string[] = []): SpeechModel {
  const engine = engines.get(id)!;
  const recording = Object.create(engine) as typeof engine;
  recording.run = (method: string, ...rest: Parameters<typeof engine.run>[1][]) => {
    methods.push(method);
    return (engine.run as (...args: unknown[]) => Promise<unknown>).call(engine, method, ...rest) as never;
  };
  return { id, engine: recording };
}

interface LiveTurn {
  transcript: string;
  deltas: string[];
  ids: Int32Array;
  methods: string[];
}

/** Feeds `audio` to a ChunkedTurn as a session would: pieces of `sizes`, eager chunks when `eager` says so. */
async function liveTurn(
  id: string,
  audio: Float32Array,
  end: number,
  sizes: number[],
  eager: boolean[],
  waits: boolean[],
  holdbackSeconds = 1,
  speechSamples?: number,
): Promise<LiveTurn> {
  const deltas: string[] = [];
  const methods: string[] = [];
  let calls = 0;
  const geometry = ctcGeometry(model(id))!;
  const streaming = { ...geometry.streaming, holdbackSeconds };
  const turn = new ChunkedTurn(
    model(id, methods),
    { ...geometry, streaming },
    'acct',
    session.signal,
    (d) => deltas.push(d),
    () => eager[calls++ % eager.length]!,
  );
  let held = 0;
  for (let i = 0; held < audio.length; i++) {
    held = Math.min(audio.length, held + sizes[i % sizes.length]!);
    turn.offer(held, (from, to) => audio.slice(from, to));
    // A chunk in flight comes back before the next piece (real time, a free model), or not (a burst, a busy one).
    if (waits[i % waits.length]) await turn.settled();
  }
  const limits = speechSamples === undefined ? undefined : { signal: new AbortController().signal, deadlineAt: Infinity, speechSamples };
  const transcript = await turn.final(audio.slice(0, end), limits);
  // A finished turn holds nothing of its session (a session has thousands of turns).
  expect(sessionListeners()).toBe(0);
  return { transcript, deltas, ids: turn.frameIds, methods };
}

async function wholeTurnIds(id: string, samples: Float32Array): Promise<Int32Array> {
  const result = await engines.get(id)!.run<{ ids: Int32Array }>('frames', { samples, skip: 0, take: null });
  return result.ids;
}

const word = fc.array(fc.constantFrom(...LETTERS), { minLength: 1, maxLength: 7 }).map((a) => a.join(''));
const text = fc.oneof(
  fc.array(word, { minLength: 1, maxLength: 6 }).map((w) => w.join(' ')),
  // Long turns: up to ≈ 40 s of demo speech.
  fc.array(word, { minLength: 20, maxLength: 60 }).map((w) => w.join(' ')),
);
// Piece sizes as clients send them: 10 ms frames to whole seconds, and odd sizes that split hops.
const sizes = fc.array(fc.oneof(fc.constantFrom(160, 320, 480, 2400, 16000), fc.integer({ min: 1, max: 40_000 })), { minLength: 1, maxLength: 8 });
const eager = fc.array(fc.boolean(), { minLength: 1, maxLength: 6 });
const waits = fc.array(fc.boolean(), { minLength: 1, maxLength: 6 });
// Silence read ahead after the turn's end (the VAD decides the end after silence_duration_ms).
const trailing = fc.integer({ min: 0, max: 16_000 });
// Stateful streams: audio held back from the state (less than the silence read ahead: the turn is encoded again).
const holdback = fc.double({ min: 0, max: 1.5, noNaN: true });

describe('ChunkedTurn on the demo CTC models', () => {
  it("lets go of its session's signal once over, cancelled or finished, mid-chunk or not: a session's listeners do not grow with its turns", async () => {
    const speech = await speak('i ni ce');
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ id: fc.constantFrom(...ASR), cancel: fc.boolean(), offered: fc.integer({ min: 0, max: speech.length }) }), {
          minLength: 1,
          maxLength: 15,
        }),
        async (turns) => {
          for (const { id, cancel, offered } of turns) {
            const geometry = ctcGeometry(model(id))!;
            const turn = new ChunkedTurn(model(id), geometry, 'acct', session.signal, () => undefined);
            turn.offer(offered, (from, to) => speech.slice(from, to));
            if (cancel) turn.cancel();
            else await turn.final(speech);
            await turn.settled();
          }
          expect(sessionListeners()).toBe(0);
        },
      ),
      { numRuns: RUNS, seed: 20261130 },
    );
  }, 120_000);

  it('streams the demo NeMo model statefully, and the demo wav2vec2 in chunks with context', () => {
    expect(ctcGeometry(model('djelia-asr-v1'))!.stateful).toBe(true);
    expect(ctcGeometry(model('sunjata-1'))!.stateful).toBe(false);
  });

  for (const id of ASR) {
    it(`${id}: exact round trip, chunk frames = whole-turn frames, deltas add up to the final`, async () => {
      await fc.assert(
        fc.asyncProperty(text, sizes, eager, waits, trailing, holdback, async (spoken, pieceSizes, eagerPattern, waitPattern, tail, held) => {
          const speech = await speak(spoken);
          const audio = new Float32Array(speech.length + tail);
          audio.set(speech);
          const live = await liveTurn(id, audio, speech.length, pieceSizes, eagerPattern, waitPattern, held);
          expect(live.transcript).toBe(spoken);
          expect(live.deltas.join('')).toBe(live.transcript);
          expect(Array.from(live.ids)).toEqual(Array.from(await wholeTurnIds(id, speech)));
          expect(new Set(live.methods)).toEqual(new Set([id === 'djelia-asr-v1' ? 'stream' : 'frames']));
        }),
        { numRuns: RUNS, seed: 20261128 },
      );
    }, 240_000);
  }

  for (const id of ASR) {
    it(`${id}: a final leaves the turn's ending silence unheard (FinalLimits.speechSamples), whatever the chunks`, async () => {
      await fc.assert(
        fc.asyncProperty(
          word,
          word,
          sizes,
          eager,
          waits,
          fc.integer({ min: 4000, max: 12_000 }),
          async (first, after, pieceSizes, eagerPattern, waitPattern, gap) => {
            // Speech past speechSamples stands for what the VAD scored as silence: were it heard, it would show.
            const [a, b] = [await speak(first), await speak(after)];
            const audio = new Float32Array(a.length + gap + b.length);
            audio.set(a);
            audio.set(b, a.length + gap);
            const speechSamples = a.length + gap;
            // A stateful stream holds back enough that nothing past speechSamples was fed (as with a real VAD turn).
            const holdback = (b.length + 1600) / RATE;
            const live = await liveTurn(id, audio, audio.length, pieceSizes, eagerPattern, waitPattern, holdback, speechSamples);
            expect(live.transcript).toBe(first);
            expect(live.deltas.join('')).toBe(live.transcript);
          },
        ),
        { numRuns: RUNS, seed: 20261129 },
      );
    }, 240_000);
  }
});
