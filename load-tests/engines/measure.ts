/**
 * Shared by the engine benchmark (load-tests/engines): timing of one call (time to the first streamed item
 * and to the end, with this process's CPU time beside the wall time so a run starved by other processes
 * shows), medians over interleaved repetitions, the inputs both sides run (demo speech of a given length, a
 * ~200-character text, demo-glossary sentences), and the row shape the table is printed from.
 */
import { speakDemo, DEMO_GAP_SECONDS, DEMO_SYMBOL_SECONDS } from '../../models/generator/demo-voice.js';
import { DEMO_GLOSSARY } from '../../models/generator/demo-nllb.js';

export interface Timing {
  firstMs: number;
  totalMs: number;
  cpuMs: number;
}

/** One measured side of a table row. `rate` is the throughput figure (RTF, or sentences/s for MT). */
export interface Figures {
  rate: string;
  firstMs?: number;
  totalMs: number;
}

export interface Row {
  runner: string;
  scenario: string;
  kuma: Figures;
  transformers?: Figures;
  /** Output comparison: 'same', a description of the difference, or 'n/a'. */
  outputs: string;
  notes: string[];
}

/** CPU and wall time of everything measured, to tell whether the machine starved this process. */
export const load = { cpuMs: 0, wallMs: 0 };

/**
 * Times `work`, which calls `first()` when its first result is out (a streamed segment or chunk); a call
 * that never does counts its end as its first result.
 */
export async function time(work: (first: () => void) => Promise<void>): Promise<Timing> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let firstMs = -1;
  await work(() => {
    if (firstMs < 0) firstMs = performance.now() - t0;
  });
  const totalMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const cpuMs = (cpu.user + cpu.system) / 1000;
  load.cpuMs += cpuMs;
  load.wallMs += totalMs;
  return { firstMs: firstMs < 0 ? totalMs : firstMs, totalMs, cpuMs };
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** Medians of the first/total times of several timings. */
export function medianTiming(ts: Timing[]): Timing {
  return { firstMs: median(ts.map((t) => t.firstMs)), totalMs: median(ts.map((t) => t.totalMs)), cpuMs: median(ts.map((t) => t.cpuMs)) };
}

/** How many untimed warm-up calls, then timed repetitions, each side gets per scenario. */
export interface Plan {
  warmups: number;
  repeats: number;
}

/**
 * Warms each side (`plan.warmups` calls: JIT-compiled JS paths such as beam search take a few calls to
 * settle), then runs each side `plan.repeats` times, alternating (kuma, other, kuma, other, …) so a burst
 * of load from other processes on the machine hits both sides alike; returns the medians.
 */
export async function interleaved(plan: Plan, sides: Array<(() => Promise<Timing>) | undefined>): Promise<Array<Timing | undefined>> {
  const all: Timing[][] = sides.map(() => []);
  for (let r = 0; r < plan.warmups + plan.repeats; r++) {
    for (let s = 0; s < sides.length; s++) {
      const side = sides[s];
      if (!side) continue;
      const timing = await side();
      if (r >= plan.warmups) all[s]!.push(timing);
    }
  }
  return sides.map((side, s) => (side ? medianTiming(all[s]!) : undefined));
}

// ---- inputs ----

/** Bambara-like words over the demo alphabet, long vowels and doubled consonants included (as Bambara writes them). */
const SPEECH_WORDS = 'i ni ce a ka kɛnɛ wa n bɛ taa sugu la baara bɛ sɔrɔ ɲɔgɔn fɛ an ka malo dun sini sɔgɔma kkaa nn'.split(' ');

/** Demo speech at 16 kHz lasting close to `seconds` (never over it), made of whole words. */
export function demoSpeech(seconds: number): { text: string; samples: Float32Array; seconds: number } {
  const symbols = Math.floor((seconds - DEMO_GAP_SECONDS) / (DEMO_SYMBOL_SECONDS + DEMO_GAP_SECONDS));
  const words: string[] = [];
  let length = -1; // no space before the first word
  for (let i = 0; ; i++) {
    const word = SPEECH_WORDS[i % SPEECH_WORDS.length]!;
    if (length + 1 + [...word].length > symbols) break;
    words.push(word);
    length += 1 + [...word].length;
  }
  const text = words.join(' ');
  const samples = speakDemo(text, 16000).samples;
  return { text, samples, seconds: samples.length / 16000 };
}

/** About 200 characters of Bambara-like text in three sentences, with phrase punctuation. */
export const TTS_TEXT =
  'I ni ce! A ka kɛnɛ wa? N bɛ taa sugu la sini sɔgɔma, ka malo ni ji san. ' +
  'Baara bɛ sɔrɔ ɲɔgɔn fɛ, an bɛ taa lakɔli la. Denmusow bɛ kalan kɛ, cɛw bɛ baara kɛ foro la, musow bɛ dumuni tobi.';

/** Deterministic Bambara sentences of 4–9 demo-glossary words, each ending with a full stop. */
export function glossarySentences(count: number): string[] {
  let seed = 7;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  return Array.from({ length: count }, () => {
    const words = Array.from({ length: 4 + Math.floor(next() * 6) }, () => DEMO_GLOSSARY[Math.floor(next() * DEMO_GLOSSARY.length)]!.bam);
    return `${words.join(' ')}.`;
  });
}

// ---- formatting ----

export const ms = (v: number | undefined) => (v === undefined ? '—' : v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));
export const rtf = (computeMs: number, audioSeconds: number) => `RTF ${(computeMs / 1000 / audioSeconds).toFixed(4)}`;
export const perSentence = (callMs: number, sentences: number) => `${((sentences * 1000) / callMs).toFixed(0)} sent/s (${ms(callMs / sentences)} ms/sent)`;

/** `other / kuma` on total time: above 1 means Kuma is faster. */
export function ratio(row: Row): string {
  return row.transformers ? (row.transformers.totalMs / row.kuma.totalMs).toFixed(2) : '—';
}
