/**
 * `npm run bench:chunking -- [--model wav2vec2-base] [--no-write]`: what encoding a realtime turn in chunks
 * changes in a full-attention model's output, against one run over the whole turn. Kuma's ChunkedTurn (the
 * realtime path) encodes turns of 3, 10 and 40 s with a left context of 0.5, 1 and 2 s (lookahead 0.5 s),
 * once in small steps (a free model: every chunk `minChunkSeconds` of new audio) and once in full chunks (a
 * busy one: `chunkSeconds`), and reports the share of frames whose class equals the whole-turn run's, and the
 * character error rate of the chunked transcript against the whole-turn one.
 *
 * With random weights this measures how far the model's output depends on context beyond the chunk — an upper
 * bound for a trained model, whose attention is mostly local — not a word error rate: that needs trained
 * weights and labelled audio. The same script on real weights measures it for them.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { speakDemo } from '../../models/generator/demo-voice.js';
import { defaultPackDir } from '../../models/real-size/generate.js';
import { tokensFromIds } from '../../src/engines/asr/ctc-decode.js';
import { EngineRegistry } from '../../src/engines/engine-registry.js';
import { ChunkedTurn, ctcGeometry } from '../../src/realtime/chunked-turn.js';
import { recordSection } from '../results.js';

const { values } = parseArgs({ options: { model: { type: 'string', default: 'wav2vec2-base' }, 'no-write': { type: 'boolean', default: false } } });
const dir = path.join(defaultPackDir(), values.model);
const engineType = (JSON.parse(fs.readFileSync(path.join(dir, '.complete.json'), 'utf8')) as { engine: string }).engine;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-chunking-'));
const manifest = path.join(tmp, 'manifest.json');
fs.writeFileSync(manifest, JSON.stringify({ models: [{ id: 'sunjata-1', engine: engineType, dir, maxQueue: 64 }] }));
const engines = EngineRegistry.fromManifest(manifest, 'djelia', { intraOpThreads: 0, interOpThreads: 1 });
await engines.start();
const model = { id: 'sunjata-1', engine: engines.get('sunjata-1')! };
const base = ctcGeometry(model)!;

function turn(seconds: number): Float32Array {
  const phrase = speakDemo('n bɛ taa sugu la sini i ni ce', 16000).samples;
  const out = new Float32Array(seconds * 16000);
  for (let at = 0; at < out.length; at += phrase.length + 1600) out.set(phrase.subarray(0, Math.min(phrase.length, out.length - at)), at);
  return out;
}

function editDistance(a: number[], b: number[]): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[b.length]!;
}

async function chunked(audio: Float32Array, left: number, small: boolean): Promise<Int32Array> {
  const geometry = { ...base, streaming: { ...base.streaming, leftSeconds: left, rightSeconds: 0.5, stateful: false } };
  const recogniser = new ChunkedTurn(
    model,
    geometry,
    'bench',
    new AbortController().signal,
    () => {},
    () => small,
  );
  for (let held = 320; held <= audio.length; held += 320) {
    recogniser.offer(held, (from, to) => audio.slice(from, to));
    await recogniser.settled(); // every chunk runs: what a model keeping up does
  }
  await recogniser.final(audio);
  return recogniser.frameIds;
}

const rows = ['| turn | left context | chunks | frames equal to the whole turn’s | CER vs the whole turn |', '|---:|---:|---|---:|---:|'];
for (const seconds of [3, 10, 40]) {
  const audio = turn(seconds);
  const whole = await model.engine.run<{ ids: Int32Array; blank: number }>('frames', { samples: audio, skip: 0, take: null });
  const wholeTokens = tokensFromIds(whole.ids, whole.blank).map((t) => t.id);
  for (const left of [0.5, 1, 2]) {
    for (const small of [true, false]) {
      const ids = await chunked(audio, left, small);
      const n = Math.min(ids.length, whole.ids.length);
      let same = 0;
      for (let i = 0; i < n; i++) if (ids[i] === whole.ids[i]) same++;
      const tokens = tokensFromIds(ids, whole.blank).map((t) => t.id);
      const cer = editDistance(tokens, wholeTokens) / Math.max(1, wholeTokens.length);
      const row = `| ${seconds} s | ${left} s | ${small ? `small (${base.streaming.minChunkSeconds} s)` : `full (${base.streaming.chunkSeconds} s)`} | ${((100 * same) / Math.max(1, whole.ids.length)).toFixed(1)} % | ${(100 * cer).toFixed(1)} % |`;
      rows.push(row);
      process.stderr.write(`${row}\n`);
    }
  }
}
await engines.close();
fs.rmSync(tmp, { recursive: true, force: true });
recordSection(
  `chunking against whole-turn decoding (${values.model})`,
  [
    `Model: ${values.model} (\`${engineType}\`) from the real-size pack, random weights. Turns of demo speech; lookahead 0.5 s; the whole turn decoded in one run as the reference.`,
    'Random weights: an upper bound on how much the output depends on context past the chunk, not a word error rate (that needs trained weights and labelled audio; run this script on them).',
  ],
  rows,
  !values['no-write'],
);
process.exit(0);
