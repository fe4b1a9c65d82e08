/**
 * The model-only floor of the bilingual bridge at real size, measured in the same run as the calls: raw
 * onnxruntime-node on the same files, with the threads the server gives each model, and nothing of Kuma between
 * the job and session.run.
 * - caller end of speech → prompt: the ASR model on the phrase's length of 16 kHz audio (the final decode of a
 *   turn heard whole; ort-worker.ts), then the translation of the caller's words as Kuma heard them into the
 *   app's language (greedy encoder + merged-decoder loop with banjugu-1's bound; nllb-worker.ts);
 * - app `text` → first reply frame: the translation of the reply's first sentence into Bambara, then the
 *   voice's first phrase of that translation (first-phrase.ts).
 * Medians: a random-weight model's time varies with what it draws.
 */
import path from 'node:path';
import { TextTokenizer } from '../../src/engines/text/tokenizer.js';
import { spawnWorker } from '../../src/threads/spawn-worker.js';
import { percentile } from '../results.js';
import type { NllbJob, NllbWorkerData } from '../real-size/nllb-worker.js';
import { serverThreads } from '../real-size/model-only.js';
import type { OrtWorkerData } from '../real-size/ort-worker.js';
import { firstPhraseModelOnlyMs } from '../tts-socket/first-phrase.js';
import fs from 'node:fs';

export interface BridgeModelOnly {
  /** ASR of the phrase + translation of what was heard, median ms. */
  promptMs: number;
  asrMs: number;
  promptTranslationMs: number;
  /** Translation of the reply's first sentence + its first phrase's synthesis, median ms. */
  replyMs: number;
  replyTranslationMs: number;
  firstPhraseMs: number;
  /** The first sentence's Bambara, as the greedy loop writes it (what the voice says first). */
  replyBambara: string;
}

export interface BridgeModelDirs {
  asr: string;
  mt: string;
  tts: string;
  /** The bound the server's banjugu-1 entry was given (nllb-runner.ts options). */
  maxLengthA: number;
  maxLengthB: number;
}

const median = (list: number[]) => percentile(list, 50);

/** Runs `job` on a fresh worker `runs` times after one warm-up; the worker is gone afterwards. */
async function onWorker<J, R extends { ms: number }>(script: string, workerData: unknown, jobs: J[], runs: number): Promise<R[][]> {
  const worker = spawnWorker(new URL(script, import.meta.url), { workerData });
  await new Promise((resolve, reject) => (worker.once('message', resolve), worker.once('error', reject)));
  let id = 0;
  const run = (job: J) =>
    new Promise<R>((resolve) => {
      const mine = id++;
      const onMessage = (m: R & { id: number }) => {
        if (m.id !== mine) return;
        worker.off('message', onMessage);
        resolve(m);
      };
      worker.on('message', onMessage);
      worker.postMessage({ ...job, id: mine });
    });
  const results: R[][] = [];
  for (const job of jobs) {
    await run(job); // warm: the arena grows to this input's size
    const times: R[] = [];
    for (let i = 0; i < runs; i++) times.push(await run(job));
    results.push(times);
  }
  await worker.terminate();
  return results;
}

export async function bridgeModelOnly(
  dirs: BridgeModelDirs,
  phraseSeconds: number[],
  heard: string[],
  appLanguage: string,
  replyFirstSentence: string,
): Promise<BridgeModelOnly> {
  const asrData: OrtWorkerData = {
    file: path.join(dirs.asr, 'model.onnx'),
    intraOpThreads: serverThreads('ctc-wav2vec2'),
    allowSpinning: false,
    layout: 'wav2vec2',
  };
  const asr = await onWorker<{ seconds: number }, { ms: number }>(
    '../real-size/ort-worker.ts',
    asrData,
    phraseSeconds.map((seconds) => ({ seconds })),
    5,
  );
  const asrMs = median(asr.map((times) => median(times.map((t) => t.ms))));

  const config = JSON.parse(fs.readFileSync(path.join(dirs.mt, 'config.json'), 'utf8')) as Record<string, number>;
  const tokenizer = TextTokenizer.fromDirectory(dirs.mt);
  const languageId = (code: string) => tokenizer.addedTokens().find((t) => t.content === code)!.id;
  const eos = config.eos_token_id!;
  const mtData: NllbWorkerData = {
    dir: dirs.mt,
    intraOpThreads: serverThreads('nllb'),
    layers: config.decoder_layers!,
    heads: config.decoder_attention_heads!,
    headDim: config.d_model! / config.decoder_attention_heads!,
    decoderStart: config.decoder_start_token_id!,
    eos,
    maxNew: (config.max_length ?? 200) - 2,
    maxLengthA: dirs.maxLengthA,
    maxLengthB: dirs.maxLengthB,
  };
  const source = (text: string, language: string) => [languageId(language), ...tokenizer.encode(text), eos];
  type Done = { ms: number; written: number[] };
  const jobs: Array<Omit<NllbJob, 'id'>> = [
    ...heard.map((text) => ({ ids: source(text, 'bam_Latn'), target: languageId(appLanguage) })),
    { ids: source(replyFirstSentence, appLanguage), target: languageId('bam_Latn') },
  ];
  const mt = await onWorker<Omit<NllbJob, 'id'>, Done>('../real-size/nllb-worker.ts', mtData, jobs, 3);
  const promptTranslationMs = median(mt.slice(0, -1).map((times) => median(times.map((t) => t.ms))));
  const replyRuns = mt.at(-1)!;
  const replyTranslationMs = median(replyRuns.map((t) => t.ms));
  const replyBambara = tokenizer.decode(replyRuns[0]!.written).trim();
  const firstPhraseMs = await firstPhraseModelOnlyMs('vits-hf', dirs.tts, replyBambara || replyFirstSentence);
  return {
    promptMs: asrMs + promptTranslationMs,
    asrMs,
    promptTranslationMs,
    replyMs: replyTranslationMs + firstPhraseMs,
    replyTranslationMs,
    firstPhraseMs,
    replyBambara,
  };
}
