/**
 * Phrase-granular synthesis (voice/phrase-synthesis.ts) on the demo voices in their worker threads: one
 * job per planned phrase gives the very samples, phrase for phrase, and the same characters that the
 * whole-text `synthesize` job gives — for every TTS layout, fixed texts and random ones; synthesis stops
 * PHRASES_AHEAD phrase ahead of a consumer that does not pull, holding no replica; and leaving early
 * cancels the phrase in flight.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineRegistry } from '../../../src/engines/engine-registry.js';
import type { ModelEngine } from '../../../src/engines/runtime/model-engine.js';
import { planPhrases } from '../../../src/engines/tts/phrase-plan.js';
import { PHRASES_AHEAD, synthesizePhrases } from '../../../src/voice/phrase-synthesis.js';
import { DEMO_SYMBOLS } from '../../../models/generator/demo-voice.js';

const RUNS = Number(process.env.KUMA_PROPERTY_RUNS ?? 8);
const TTS = ['jifili-1', 'djelia-tts-v1', 'djelia-tts-v2'] as const;
const LETTERS = DEMO_SYMBOLS.filter((s) => s !== ' ');

let engines: EngineRegistry;
beforeAll(async () => {
  engines = EngineRegistry.fromManifest('models/kuma-models.json', 'djelia', { intraOpThreads: 1, interOpThreads: 1 });
  await engines.start();
}, 120_000);
afterAll(() => engines.close());

interface Chunk {
  samples: Float32Array;
  sampleRate: number;
  characters: number;
}

async function wholeText(engine: ModelEngine, text: string): Promise<Chunk[]> {
  const out: Chunk[] = [];
  for await (const c of engine.stream<Chunk>('synthesize', { text })) out.push({ samples: c.samples, sampleRate: c.sampleRate, characters: c.characters });
  return out;
}

async function byPhrase(engine: ModelEngine, text: string): Promise<Chunk[]> {
  const phrases = planPhrases(text, new Set(String(engine.info.alphabet)));
  const out: Chunk[] = [];
  for await (const c of synthesizePhrases(engine, phrases, {}, new AbortController().signal, 'test')) out.push(c);
  return out;
}

function expectSame(a: Chunk[], b: Chunk[]): void {
  expect(b.map((c) => c.characters)).toEqual(a.map((c) => c.characters));
  expect(b.map((c) => c.sampleRate)).toEqual(a.map((c) => c.sampleRate));
  for (let i = 0; i < a.length; i++) expect(Buffer.from(b[i]!.samples.buffer).equals(Buffer.from(a[i]!.samples.buffer))).toBe(true);
}

const FIXED = ['i ni ce', 'Aw ni ce. I ka kɛnɛ wa? Awɔ, n ka kɛnɛ. 123 !!! ...', `${'n bɛ taa sugu la sini, an bɛ malo san. '.repeat(8)}`, '... , a bɛ yen'];

const textArb = fc
  .array(fc.oneof(fc.constantFrom(...LETTERS), fc.constantFrom(' ', ' ', ', ', '. ', '? ', '12', '0612 ', "n'a ")), { minLength: 1, maxLength: 400 })
  .map((parts) => parts.join(''))
  .filter((t) => /[a-zɛɔɲŋ0-9]/iu.test(t));

describe('phrase-granular synthesis', () => {
  for (const id of TTS) {
    it(`${id}: one job per phrase gives the samples and characters of the whole-text job`, async () => {
      const engine = engines.get(id)!;
      for (const text of FIXED) expectSame(await wholeText(engine, text), await byPhrase(engine, text));
      await fc.assert(
        fc.asyncProperty(textArb, async (text) => expectSame(await wholeText(engine, text), await byPhrase(engine, text))),
        { numRuns: RUNS },
      );
    }, 120_000);
  }

  it('runs at most PHRASES_AHEAD phrase ahead of a consumer that stops pulling, holding no replica meanwhile', async () => {
    const engine = engines.get('jifili-1')!;
    const text = 'n bɛ taa sugu la sini, an bɛ malo san. '.repeat(10);
    const phrases = planPhrases(text, new Set(String(engine.info.alphabet)));
    expect(phrases.length).toBeGreaterThan(PHRASES_AHEAD + 2);
    let jobs = 0;
    const counting = { run: <T>(...args: Parameters<ModelEngine['run']>) => (jobs++, engine.run<T>(...args)) };
    const stream = synthesizePhrases(counting, phrases, {}, new AbortController().signal, 'test');
    await stream.next(); // the consumer holds phrase 0 and pulls no more
    await expect.poll(() => jobs).toBe(1 + PHRASES_AHEAD);
    await expect.poll(() => engine.stats().busy).toBe(0);
    await new Promise((r) => setTimeout(r, 200));
    expect(jobs).toBe(1 + PHRASES_AHEAD);
    const rest: Chunk[] = [];
    for (let r = await stream.next(); !r.done; r = await stream.next()) rest.push(r.value);
    expect(rest).toHaveLength(phrases.length - 1);
    expect(jobs).toBe(phrases.length);
  });

  it('leaving early cancels the phrase in flight and starts no more', async () => {
    const engine = engines.get('jifili-1')!;
    const phrases = planPhrases('n bɛ taa sugu la sini, an bɛ malo san. '.repeat(10), new Set(String(engine.info.alphabet)));
    let jobs = 0;
    const counting = { run: <T>(...args: Parameters<ModelEngine['run']>) => (jobs++, engine.run<T>(...args)) };
    for await (const _ of synthesizePhrases(counting, phrases, {}, new AbortController().signal, 'test')) break;
    await expect.poll(() => engine.stats().busy).toBe(0);
    expect(jobs).toBeLessThanOrEqual(1 + PHRASES_AHEAD);
  });
});
