/**
 * server_vad with window levels: silence ends a turn only once it is quiet (more than LOUD_MARGIN_DB under the
 * turn's loudest speech window); loud non-speech — a voiced sound Silero scores ≈ 0, as it does the demo voice's
 * consonants — holds the turn open for at most LOUD_GRACE_MS more. Without levels, or with quiet ones, the
 * events are the same as before.
 */
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { LOUD_GRACE_MS, LOUD_MARGIN_DB, TurnDetector, WINDOW_MS } from '../../../../src/realtime/vad/turn-detector.js';

const RUNS = Number(process.env.KUMA_PROPERTY_RUNS ?? 100);
const options = { threshold: 0.5, prefixPaddingMs: 300, silenceDurationMs: 352 };
const windows = (ms: number) => Math.round(ms / WINDOW_MS);

it('quiet levels (or none) give the same events as before, for any probabilities', () => {
  const probabilitiesArb = fc
    .array(fc.record({ p: fc.constantFrom(0, 0.02, 0.4, 0.9, 1), n: fc.integer({ min: 1, max: 40 }) }), { maxLength: 30 })
    .map((runs) => runs.flatMap(({ p, n }) => Array<number>(n).fill(p)));
  fc.assert(
    fc.property(probabilitiesArb, fc.integer({ min: 32, max: 1500 }), (probabilities, silenceDurationMs) => {
      const plain = new TurnDetector({ ...options, silenceDurationMs }).feed(0, probabilities);
      // Speech at -20 dBFS, everything else more than LOUD_MARGIN_DB under it: quiet.
      const levels = probabilities.map((p) => (p >= 0.5 ? -20 : -20 - LOUD_MARGIN_DB - 1));
      expect(new TurnDetector({ ...options, silenceDurationMs }).feed(0, probabilities, levels)).toEqual(plain);
    }),
    { numRuns: RUNS },
  );
});

it('loud non-speech inside a turn does not end it; the quiet silence after it does, counted from where it is quiet', () => {
  const speech = Array<number>(windows(320)).fill(0.9);
  const missed = Array<number>(windows(640)).fill(0.02); // longer than silence_duration_ms, as loud as the speech
  const quiet = Array<number>(windows(640)).fill(0.01);
  const probabilities = [...speech, ...missed, ...speech, ...quiet];
  const levels = [...speech.map(() => -20), ...missed.map(() => -24), ...speech.map(() => -20), ...quiet.map(() => -70)];
  const events = new TurnDetector(options).feed(0, probabilities, levels);
  const quietFromMs = (2 * speech.length + missed.length) * WINDOW_MS;
  expect(events).toEqual([
    { type: 'speech_started', audioStartMs: 0 },
    { type: 'speech_stopped', audioEndMs: quietFromMs + options.silenceDurationMs, silenceStartMs: quietFromMs },
  ]);
  // Without levels the same scores split the phrase at the missed sound: the phantom turn.
  expect(new TurnDetector(options).feed(0, probabilities).filter((e) => e.type === 'speech_started')).toHaveLength(2);
});

it('loud non-speech that goes on (noise as loud as the voice) ends the turn LOUD_GRACE_MS after quiet silence would', () => {
  const speech = Array<number>(windows(320)).fill(0.9);
  const noise = Array<number>(windows(5000)).fill(0.02);
  const events = new TurnDetector(options).feed(0, [...speech, ...noise], [...speech.map(() => -20), ...noise.map(() => -22)]);
  const silenceFromMs = speech.length * WINDOW_MS;
  const stopped = events.find((e) => e.type === 'speech_stopped')!;
  expect(stopped).toEqual({
    type: 'speech_stopped',
    audioEndMs: silenceFromMs + Math.ceil((options.silenceDurationMs + LOUD_GRACE_MS) / WINDOW_MS) * WINDOW_MS,
  });
  expect(events.filter((e) => e.type === 'speech_started')).toHaveLength(1);
});
