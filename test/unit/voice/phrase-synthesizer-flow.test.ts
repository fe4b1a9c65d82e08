/**
 * The phrase producer's flow with an engine whose jobs the test finishes by hand: the order phrases come
 * out in, how far synthesis runs ahead, the job priorities, what is counted as owed, and how the stream
 * ends when a phrase fails or the signal aborts (with a job in flight: its error; with none: the end). The
 * speaker, which reads the producer between encodes, ends at once when aborted.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { closeSharedEncoderPool } from '../../../src/codecs/encode-pool/shared-pool.js';
import type { JobOptions } from '../../../src/engines/runtime/model-engine.js';
import { PhraseSpeaker } from '../../../src/voice/phrase-speaker.js';
import { PHRASES_AHEAD, PhraseSynthesizer, type SynthesizedPhrase } from '../../../src/voice/phrase-synthesis.js';

interface Job {
  text: string;
  finished: boolean;
  priority: JobOptions['priority'];
  finish(): void;
  fail(error: Error): void;
}

/** An engine whose jobs wait for the test; an aborted job rejects at once (unless `ignoreAbort`: a slow cancel). */
function handEngine({ ignoreAbort = false } = {}) {
  const jobs: Job[] = [];
  const engine = {
    run<T>(_method: string, input: unknown, signal?: AbortSignal, options?: JobOptions): Promise<T> {
      const { text } = input as { text: string };
      return new Promise<T>((resolve, reject) => {
        if (!ignoreAbort) signal?.addEventListener('abort', () => reject(new Error(`cancelled ${text}`)), { once: true });
        const samples = new Float32Array(text.length);
        const job: Job = {
          text,
          finished: false,
          priority: options?.priority,
          finish: () => ((job.finished = true), resolve({ samples, sampleRate: 16000 } as T)),
          fail: reject,
        };
        jobs.push(job);
      });
    },
  };
  return { engine, jobs };
}

afterAll(async () => {
  await closeSharedEncoderPool();
});

const phrase = (text: string) => ({ text, spoken: text, characters: text.length, boundaryAfter: true });
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

function synthesizer(signal = new AbortController().signal, ahead?: number) {
  const { engine, jobs } = handEngine();
  return { s: new PhraseSynthesizer({ engine, voice: {}, account: 'acct', signal, ...(ahead ? { ahead } : {}) }), jobs };
}

describe('PhraseSynthesizer flow', () => {
  it('gives every phrase once, in order, never more than PHRASES_AHEAD jobs ahead of the consumer', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom('add', 'take', 'finish'), { maxLength: 40 }), async (steps) => {
        const { s, jobs } = synthesizer();
        const phrases = s[Symbol.asyncIterator]();
        const got: string[] = [];
        let added = 0;
        let taken = 0;
        const take = async () => {
          const next = await phrases.next();
          if (!next.done) got.push(next.value.text);
        };
        for (const step of steps) {
          if (step === 'add') s.add(phrase(`p${added++}`));
          else if (step === 'take' && taken < jobs.filter((j) => j.finished).length) (taken++, await take());
          else if (step === 'finish') jobs.find((j) => !j.finished)?.finish();
          await settle();
          // Jobs started: those taken, the one the consumer may be waiting on, and PHRASES_AHEAD more.
          expect(jobs.length).toBeLessThanOrEqual(taken + PHRASES_AHEAD);
        }
        s.end();
        for (;;) {
          await settle();
          jobs.find((j) => !j.finished)?.finish();
          const next = await phrases.next();
          if (next.done) break;
          got.push(next.value.text);
        }
        expect(got).toEqual(Array.from({ length: added }, (_, i) => `p${i}`));
      }),
      { numRuns: 50 },
    );
  });

  it('counts a phrase as owed and unsynthesized from add() until it is synthesized, and as owed until taken', async () => {
    const { s, jobs } = synthesizer();
    const phrases = s[Symbol.asyncIterator]();
    s.add(phrase('abc'));
    expect([s.owed, s.caughtUp, s.unsynthesizedCharacters]).toEqual([true, false, 3]);
    await settle();
    s.add(phrase('de'));
    expect(s.unsynthesizedCharacters).toBe(5);
    jobs[0]!.finish();
    await settle();
    expect([s.hasReady, s.unsynthesizedCharacters]).toEqual([true, 2]);
    expect((await phrases.next()).value?.text).toBe('abc');
    await settle();
    jobs[1]!.finish();
    await settle();
    expect([s.owed, s.caughtUp, s.hasReady, s.unsynthesizedCharacters]).toEqual([true, true, true, 0]);
    await phrases.next();
    expect(s.owed).toBe(false);
  });

  it('runs the first job as an opening, the jobs behind a taken phrase as continuations', async () => {
    const { s, jobs } = synthesizer();
    s.add(phrase('a'));
    s.add(phrase('b'));
    s.add(phrase('c'));
    await settle();
    jobs[0]!.finish();
    await s[Symbol.asyncIterator]().next();
    await settle();
    jobs[1]!.finish();
    await settle();
    expect(jobs.map((j) => j.priority)).toEqual(['opening', 'continuation']);
  });

  it('a failed phrase ends the stream after the phrases before it: the iterator throws its error', async () => {
    const { s, jobs } = synthesizer();
    for (const t of ['a', 'b', 'c']) s.add(phrase(t));
    s.end();
    const got: string[] = [];
    const reading = (async () => {
      for await (const p of s) got.push(p.text);
    })();
    await settle();
    jobs[0]!.finish();
    await settle();
    jobs[1]!.fail(new Error('voice broke'));
    await expect(reading).rejects.toThrow('voice broke');
    expect(got).toEqual(['a']);
    expect(s.failure?.error).toEqual(new Error('voice broke'));
    expect(jobs).toHaveLength(2);
  });

  it('aborting while a job runs: what was ready comes first, then the job error; no failure is reported', async () => {
    const abort = new AbortController();
    const { s, jobs } = synthesizer(abort.signal, 2);
    for (const t of ['a', 'b', 'c']) s.add(phrase(t));
    s.end();
    await settle();
    jobs[0]!.finish();
    await settle();
    expect(jobs).toHaveLength(2); // a is ready, b in flight
    abort.abort();
    const got: SynthesizedPhrase[] = [];
    await expect(
      (async () => {
        for await (const p of s) got.push(p);
      })(),
    ).rejects.toThrow('cancelled b');
    expect(got.map((p) => p.text)).toEqual(['a']);
    expect([s.cancelled, s.failure]).toEqual([true, null]);
  });

  it('aborting while waiting for room: what was ready comes first, then the end, not an error', async () => {
    const abort = new AbortController();
    const { s, jobs } = synthesizer(abort.signal);
    for (const t of ['a', 'b', 'c']) s.add(phrase(t));
    s.end();
    await settle();
    jobs[0]!.finish();
    await settle();
    expect(jobs).toHaveLength(1); // a is ready and not taken: no room for b
    abort.abort();
    const got: string[] = [];
    for await (const p of s) got.push(p.text);
    expect(got).toEqual(['a']);
    expect(jobs).toHaveLength(1);
  });

  it('the speaker ends at once when aborted, without waiting for the job in flight to settle', async () => {
    const abort = new AbortController();
    const { engine, jobs } = handEngine({ ignoreAbort: true });
    const speaker = new PhraseSpeaker({ engine, voice: {}, format: 'pcm', speakable: null, account: 'acct', signal: abort.signal });
    speaker.say({ text: 'i ni ce', characters: 7 });
    const audio = speaker[Symbol.asyncIterator]();
    const next = audio.next();
    await settle();
    expect(jobs).toHaveLength(1);
    abort.abort();
    expect(await next).toEqual({ done: true, value: undefined });
    speaker.say({ text: 'a ka kɛnɛ', characters: 9 }); // ignored once stopped
    await settle();
    expect(jobs).toHaveLength(1);
  });
});
