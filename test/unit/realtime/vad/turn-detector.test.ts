/**
 * server_vad turn detection: event invariants over any probabilities and any chunking, padding clamps,
 * hysteresis, reset; and on Silero's real scores of demo speech, one turn per phrase with OpenAI's defaults
 * and a split at every silence longer than silence_duration_ms (plus Silero's speech tail).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SileroVad } from '../../../../src/engines/vad/silero-vad.js';
import { DEFAULT_SERVER_VAD, TurnDetector, WINDOW_MS, type TurnDetectorOptions } from '../../../../src/realtime/vad/turn-detector.js';
import type { TurnEvent } from '../../../../src/realtime/vad/contract.js';
import { PHRASES, conversation, concat, RATE } from './vad-audio.js';
import { speakDemo } from '../../../../models/generator/demo-voice.js';

const RUNS = Number(process.env.KUMA_PROPERTY_RUNS ?? 100);

let vad: SileroVad;
beforeAll(async () => {
  vad = await SileroVad.load({ intraOpThreads: 1, interOpThreads: 1 });
});
afterAll(() => vad?.close());

const optionsArb: fc.Arbitrary<TurnDetectorOptions> = fc.record({
  threshold: fc.double({ min: 0.1, max: 0.9, noNaN: true }),
  prefixPaddingMs: fc.integer({ min: 0, max: 1000 }),
  silenceDurationMs: fc.integer({ min: 0, max: 1500 }),
  minSpeechWindows: fc.integer({ min: 1, max: 4 }),
});

/** Probabilities shaped like speech: runs of high, low and in-between values. */
const probabilitiesArb = fc
  .array(fc.record({ p: fc.oneof(fc.double({ min: 0, max: 1, noNaN: true }), fc.constantFrom(0, 0.02, 0.4, 0.9, 1)), n: fc.integer({ min: 1, max: 40 }) }), {
    maxLength: 30,
  })
  .map((runs) => runs.flatMap(({ p, n }) => Array<number>(n).fill(p)));

function feedInChunks(detector: TurnDetector, probabilities: number[], cuts: number[]): TurnEvent[] {
  const events: TurnEvent[] = [];
  let at = 0;
  for (const cut of [...cuts, probabilities.length]) {
    const end = Math.min(probabilities.length, Math.max(at, cut));
    events.push(...detector.feed(at, probabilities.slice(at, end)));
    at = end;
  }
  return events;
}

function turnsOf(events: TurnEvent[]): Array<{ start: number; end: number }> {
  const turns: Array<{ start: number; end: number }> = [];
  for (const e of events) {
    if (e.type === 'speech_started') turns.push({ start: e.audioStartMs, end: Infinity });
    else turns.at(-1)!.end = e.audioEndMs;
  }
  return turns;
}

describe('TurnDetector', () => {
  it('events alternate started/stopped, times never go back, and chunking does not matter', () => {
    fc.assert(
      fc.property(optionsArb, probabilitiesArb, fc.array(fc.nat(1200), { maxLength: 10 }), (options, probabilities, cuts) => {
        const whole = new TurnDetector(options).feed(0, probabilities);
        expect(
          feedInChunks(
            new TurnDetector(options),
            probabilities,
            [...cuts].sort((a, b) => a - b),
          ),
        ).toEqual(whole);
        let last = 0;
        whole.forEach((event, i) => {
          expect(event.type).toBe(i % 2 === 0 ? 'speech_started' : 'speech_stopped');
          const at = event.type === 'speech_started' ? event.audioStartMs : event.audioEndMs;
          expect(at).toBeGreaterThanOrEqual(last);
          expect(at).toBeLessThanOrEqual(probabilities.length * WINDOW_MS);
          if (event.type === 'speech_stopped') expect(at).toBeGreaterThan(last);
          last = at;
        });
      }),
      { numRuns: RUNS * 5, seed: 20260917 },
    );
  });

  it('a turn starts prefix_padding_ms before its onset, clamped to 0 and to the previous turn’s end', () => {
    fc.assert(
      fc.property(
        optionsArb,
        fc.array(fc.record({ quiet: fc.integer({ min: 0, max: 60 }), loud: fc.integer({ min: 4, max: 30 }) }), { minLength: 1, maxLength: 5 }),
        (options, shape) => {
          const probabilities = shape.flatMap(({ quiet, loud }) => [...Array<number>(quiet).fill(0), ...Array<number>(loud).fill(1)]);
          const events = new TurnDetector(options).feed(0, [...probabilities, ...Array<number>(60).fill(0)]);
          // Recompute the onsets by hand: each loud run starts a turn unless the previous turn has not ended.
          let previousEnd = 0;
          let window = 0;
          let open = false;
          let silenceStart = -1;
          const expected: TurnEvent[] = [];
          for (const p of [...probabilities, ...Array<number>(60).fill(0)]) {
            if (p === 1) {
              silenceStart = -1;
              if (!open && (window === 0 || probabilitiesAt(probabilities, window - 1) === 0)) {
                // the run starting here starts a turn: runs are ≥ 4 windows, minSpeechWindows ≤ 4
                expected.push({ type: 'speech_started', audioStartMs: Math.max(0, previousEnd, window * WINDOW_MS - options.prefixPaddingMs) });
                open = true;
              }
            } else if (open) {
              if (silenceStart < 0) silenceStart = window;
              if ((window + 1 - silenceStart) * WINDOW_MS >= options.silenceDurationMs) {
                expected.push({ type: 'speech_stopped', audioEndMs: (window + 1) * WINDOW_MS, silenceStartMs: silenceStart * WINDOW_MS });
                previousEnd = (window + 1) * WINDOW_MS;
                open = false;
              }
            }
            window++;
          }
          expect(events).toEqual(expected);
        },
      ),
      { numRuns: RUNS * 3, seed: 20260918 },
    );
  });

  it('needs minSpeechWindows consecutive windows to start, and hysteresis to stop', () => {
    const detector = new TurnDetector({ ...DEFAULT_SERVER_VAD, prefixPaddingMs: 0, silenceDurationMs: 96 });
    expect(detector.feed(0, [0, 0.9, 0.1, 0.9, 0.1])).toEqual([]); // lone windows: a click, not speech
    expect(detector.feed(5, [0.9, 0.9])).toEqual([{ type: 'speech_started', audioStartMs: 5 * WINDOW_MS }]);
    // 0.4 is between threshold − 0.15 and threshold: it neither starts the silence nor ends it.
    // The silence starts at the 0.3 (window 11): that is where the VAD heard the speech end.
    expect(detector.feed(7, [0.4, 0.4, 0.4, 0.4, 0.3, 0.4, 0.4])).toEqual([
      { type: 'speech_stopped', audioEndMs: 14 * WINDOW_MS, silenceStartMs: 11 * WINDOW_MS },
    ]);
    expect(detector.speaking).toBe(false);
  });

  it('reset() drops the turn in progress; the next turn reaches back no further than the buffer start', () => {
    const detector = new TurnDetector(DEFAULT_SERVER_VAD);
    expect(detector.feed(0, [0, 0, 0.9, 0.9, 0.9])).toHaveLength(1);
    detector.reset(5 * WINDOW_MS);
    expect(detector.speaking).toBe(false);
    expect(detector.feed(3, [0.9, 0.9])).toEqual([]); // before the buffer start: ignored
    expect(detector.feed(5, [0.9, 0.9])).toEqual([{ type: 'speech_started', audioStartMs: 5 * WINDOW_MS }]);
  });

  it('silentForMs counts the audio since speech was last heard', () => {
    const detector = new TurnDetector({ ...DEFAULT_SERVER_VAD, silenceDurationMs: 64 });
    detector.feed(0, [0, 0, 0]);
    expect(detector.silentForMs).toBe(3 * WINDOW_MS);
    detector.feed(3, [0.9, 0.9]);
    expect(detector.silentForMs).toBe(0);
    detector.feed(5, [0, 0, 0, 0]);
    expect(detector.silentForMs).toBe(4 * WINDOW_MS);
  });

  it('on demo speech with 1 s silences: one turn per phrase with the default options, each covering its phrase', async () => {
    const { samples, spans } = conversation(PHRASES, 1000);
    const turns = turnsOf(new TurnDetector(DEFAULT_SERVER_VAD).feed(0, await vad.probabilities(samples)));
    expect(turns.length).toBe(spans.length);
    turns.forEach((turn, i) => {
      expect(turn.start).toBeLessThanOrEqual(spans[i]!.startMs);
      expect(turn.end).toBeGreaterThanOrEqual(spans[i]!.endMs);
      expect(turn.end).toBeLessThan(spans[i + 1]?.startMs ?? Infinity);
    });
  });

  it('a silence longer than silence_duration_ms (plus Silero’s ≤ 200 ms speech tail) between two demo phrases always splits them', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.nat(PHRASES.length - 1),
        fc.nat(PHRASES.length - 1),
        fc.integer({ min: 100, max: 1200 }),
        fc.integer({ min: 0, max: 600 }),
        fc.double({ min: 0.3, max: 0.7, noNaN: true }),
        async (a, b, silenceDurationMs, prefixPaddingMs, threshold) => {
          const first = speakDemo(PHRASES[a]!, RATE);
          const second = speakDemo(PHRASES[b]!, RATE);
          const firstEndMs = first.symbols.at(-1)!.end * 1000;
          const gap = new Float32Array(Math.round(((silenceDurationMs + 200 + 64) * RATE) / 1000));
          const secondStartMs = (first.samples.length + gap.length) / (RATE / 1000) + second.symbols[0]!.start * 1000;
          const samples = concat([first.samples, gap, second.samples, new Float32Array(RATE)]);
          const turns = turnsOf(new TurnDetector({ threshold, prefixPaddingMs, silenceDurationMs }).feed(0, await vad.probabilities(samples)));
          expect(turns.filter((t) => t.start < firstEndMs && t.end > secondStartMs)).toEqual([]);
        },
      ),
      { numRuns: Math.ceil(RUNS / 5), seed: 20260919 },
    );
  }, 120_000); // Silero on every case's audio, in this process
});

function probabilitiesAt(probabilities: number[], window: number): number {
  return probabilities[window] ?? 0;
}
