/**
 * The scenarios of the engine benchmark: CTC recognition (both layouts), VITS synthesis (three layouts),
 * NLLB translation (BPE and Unigram tokenizers; 1 and 16 sentences; greedy and beam 4) and Silero VAD,
 * each timed through Kuma's runner called in-process (as its worker calls it) and, where transformers.js
 * supports the layout, through its pipeline on the same files (translation greedy only: transformers.js
 * has no beam search). Each scenario first checks that both sides produce the same output, then measures
 * interleaved repetitions.
 */
import type { Runner, RunnerContext } from '../../src/engines/runner.js';
import type { Segment } from '../../src/engines/asr/ctc-decode.js';
import type { SpeechChunk } from '../../src/engines/tts/vits-runner.js';
import type { SpeechRegion } from '../../src/engines/vad/silero-vad.js';
import type { TranslateOutput } from '../../src/engines/mt/nllb-runner.js';
import type { HfAsr, HfTranslate, HfTts } from './hf-mirror.js';
import { glossarySentences, interleaved, ms, perSentence, rtf, time, type Plan, type Row } from './measure.js';

/** What the model worker gives a job: checkpoints yield to the event loop. */
export const context = (): RunnerContext => ({ signal: new AbortController().signal, checkpoint: () => new Promise<void>((resolve) => setImmediate(resolve)) });

export interface Speech {
  label: string;
  text: string;
  samples: Float32Array;
  seconds: number;
}

const short = (s: string) => (s.length > 60 ? `${s.slice(0, 57)}…` : s);

async function transcribe(runner: Runner, samples: Float32Array, first = () => {}): Promise<string> {
  const texts: string[] = [];
  for await (const segment of runner.call('transcribe', { samples }, context()) as AsyncIterable<Segment>) {
    first();
    texts.push(segment.text);
  }
  return texts.join(' ');
}

/** Describes how a transformers.js transcript differs from Kuma's. */
function compareTranscripts(kuma: string, other: string): string {
  if (kuma === other) return 'same';
  // transformers.js 4.x drops special tokens (the CTC blank among them) BEFORE merging repeated frames,
  // so a doubled letter, which CTC spells letter-blank-letter, comes out single.
  const merged = kuma.replace(/(.)\1+/gu, '$1');
  const [a, b] = [kuma.split(' '), other.split(' ')];
  const pairs = a.length === b.length ? [...new Set(a.map((w, i) => (w === b[i] ? '' : `"${w}" → "${b[i]}"`)).filter(Boolean))] : [];
  const examples = pairs.length
    ? `${pairs.slice(0, 4).join(', ')}; ${a.filter((w, i) => w !== b[i]).length} of ${a.length} words`
    : `"${short(kuma)}" vs "${short(other)}"`;
  if (merged === other) return `DIFFERENT: transformers.js merges doubled letters (${examples})`;
  return `DIFFERENT: Kuma vs transformers.js: ${examples}`;
}

export async function benchAsr(engine: string, runner: Runner, hf: HfAsr | undefined, speech: Speech, plan: Plan): Promise<Row> {
  // Warm both sides on this very input (first-run allocations of each shape), and compare outputs.
  const kumaText = await transcribe(runner, speech.samples);
  const hfText = hf ? await hf(speech.samples) : undefined;
  const notes: string[] = [];
  if (kumaText !== speech.text) notes.push(`Kuma's transcript is not the spoken text: "${short(kumaText)}"`);
  const [kuma, other] = await interleaved(plan, [
    () => time(async (first) => void (await transcribe(runner, speech.samples, first))),
    hf ? () => time(async () => void (await hf(speech.samples))) : undefined,
  ]);
  if (!hf) notes.push('transformers.js has no loader for this layout');
  notes.push(`${speech.seconds.toFixed(1)} s of demo speech in one chunk; the first segment comes when the chunk is decoded`);
  return {
    runner: engine,
    scenario: speech.label,
    kuma: { rate: rtf(kuma!.totalMs, speech.seconds), firstMs: kuma!.firstMs, totalMs: kuma!.totalMs },
    transformers: other && { rate: rtf(other.totalMs, speech.seconds), firstMs: other.firstMs, totalMs: other.totalMs },
    outputs: hfText === undefined ? 'n/a' : compareTranscripts(kumaText, hfText),
    notes,
  };
}

async function synthesize(runner: Runner, text: string, first = () => {}): Promise<SpeechChunk[]> {
  const chunks: SpeechChunk[] = [];
  for await (const chunk of runner.call('synthesize', { text }, context()) as AsyncIterable<SpeechChunk>) {
    first();
    chunks.push(chunk);
  }
  return chunks;
}

/** Per phrase: same length, and the largest sample difference. */
function compareWaveforms(kuma: SpeechChunk[], other: Float32Array[]): string {
  const lengths = kuma.map((c, i) => `${c.samples.length}/${other[i]?.length}`);
  if (kuma.some((c, i) => c.samples.length !== other[i]?.length)) return `DIFFERENT lengths per phrase (Kuma/transformers.js): ${lengths.join(', ')}`;
  let maxDiff = 0;
  kuma.forEach((c, i) => c.samples.forEach((v, j) => (maxDiff = Math.max(maxDiff, Math.abs(v - other[i]![j]!)))));
  const samples = kuma.reduce((n, c) => n + c.samples.length, 0);
  return maxDiff === 0
    ? `same (${kuma.length} phrases, ${samples} samples, bit-identical)`
    : `same lengths (${samples} samples); max sample difference ${maxDiff.toExponential(1)}`;
}

/**
 * Kuma streams one chunk per phrase of the text; transformers.js is given the same phrases one call after
 * the other (what a streaming server built on it would do), so both synthesize exactly the same inputs.
 */
export async function benchTts(engine: string, runner: Runner, hf: HfTts | undefined, text: string, plan: Plan): Promise<Row> {
  const chunks = await synthesize(runner, text);
  const phrases = chunks.map((c) => c.text);
  const hfAudio: Float32Array[] = [];
  if (hf) for (const phrase of phrases) hfAudio.push(await hf(phrase));
  const seconds = chunks.reduce((n, c) => n + c.samples.length / c.sampleRate, 0);
  const [kuma, other] = await interleaved(plan, [
    () => time(async (first) => void (await synthesize(runner, text, first))),
    hf
      ? () =>
          time(async (first) => {
            for (const phrase of phrases) {
              await hf(phrase);
              first();
            }
          })
      : undefined,
  ]);
  const notes = [`${[...text].length} characters → ${phrases.length} phrases, ${seconds.toFixed(1)} s of audio at ${chunks[0]!.sampleRate} Hz`];
  if (!hf) notes.push('transformers.js has no loader for this layout');
  return {
    runner: engine,
    scenario: `${[...text].length}-char text`,
    kuma: { rate: rtf(kuma!.totalMs, seconds), firstMs: kuma!.firstMs, totalMs: kuma!.totalMs },
    transformers: other && { rate: rtf(other.totalMs, seconds), firstMs: other.firstMs, totalMs: other.totalMs },
    outputs: hf ? compareWaveforms(chunks, hfAudio) : 'n/a',
    notes,
  };
}

/** Silero VAD over the long utterance: Kuma only (transformers.js has no Silero loader). */
export async function benchVad(runner: Runner, speech: Speech, plan: Plan): Promise<Row> {
  const detect = async () => (await runner.call('detect', { samples: speech.samples }, context())) as SpeechRegion[];
  const regions = await detect();
  const [kuma] = await interleaved(plan, [() => time(async () => void (await detect()))]);
  const windows = Math.floor(speech.samples.length / 512);
  return {
    runner: 'silero-vad (v5)',
    scenario: speech.label,
    kuma: { rate: rtf(kuma!.totalMs, speech.seconds), totalMs: kuma!.totalMs },
    outputs: 'n/a',
    notes: [
      `${ms(kuma!.totalMs / windows)} ms per 32 ms window (${windows} windows, ${regions.length} speech region${regions.length === 1 ? '' : 's'} found)`,
      'transformers.js has no Silero VAD loader',
    ],
  };
}

// ---- translation ----

const SOURCE = 'bam_Latn';
const TARGET = 'fra_Latn';
/** The demo test suite's Bambara sentence (phrase punctuation, a word outside the glossary). */
const ONE = ['bi, n fa ni n ba bɛ malo dun.'];

async function translate(runner: Runner, texts: string[], beams: number): Promise<string[]> {
  const out = (await runner.call('translate', { texts, source: SOURCE, target: TARGET, beams }, context())) as TranslateOutput;
  return out.translations;
}

function compare(kuma: string[], other: string[]): string {
  const differing = kuma.map((k, i) => [k, other[i]] as const).filter(([k, o]) => k !== o);
  if (!differing.length) return `same (${kuma.length} translation${kuma.length === 1 ? '' : 's'})`;
  const [k, o] = differing[0]!;
  return `DIFFERENT in ${differing.length}/${kuma.length}, e.g. Kuma "${k}" vs transformers.js "${o}"`;
}

async function scenario(name: string, runner: Runner, hf: HfTranslate | undefined, texts: string[], beams: number, plan: Plan): Promise<Row> {
  // Warm both sides on this input (batch shapes) and compare what they translate.
  const kumaOut = await translate(runner, texts, beams);
  const hfOut = hf && beams === 1 ? await hf(texts, SOURCE, TARGET) : undefined;
  const [kuma, other] = await interleaved(plan, [
    () => time(async () => void (await translate(runner, texts, beams))),
    hfOut ? () => time(async () => void (await hf!(texts, SOURCE, TARGET))) : undefined,
  ]);
  const notes: string[] = [];
  if (!hf) notes.push('no transformers.js run');
  else if (beams > 1) notes.push('transformers.js has no beam search: Kuma only');
  if (texts.length > 1) notes.push(`one call, ${texts.length} sentences batched (right-padded, masked)`);
  return {
    runner: name,
    scenario: `${texts.length === 1 ? '1 sentence' : `batch of ${texts.length}`}, ${beams === 1 ? 'greedy' : `beam ${beams}`}`,
    kuma: { rate: perSentence(kuma!.totalMs, texts.length), totalMs: kuma!.totalMs },
    transformers: other && { rate: perSentence(other.totalMs, texts.length), totalMs: other.totalMs },
    outputs: hfOut ? compare(kumaOut, hfOut) : 'n/a',
    notes,
  };
}

export async function benchMt(name: string, runner: Runner, hf: HfTranslate | undefined, plan: Plan): Promise<Row[]> {
  const batch = glossarySentences(16);
  const rows: Row[] = [];
  for (const beams of [1, 4]) {
    rows.push(await scenario(name, runner, hf, ONE, beams, plan));
    rows.push(await scenario(name, runner, hf, batch, beams, plan));
  }
  return rows;
}
