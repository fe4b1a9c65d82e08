/**
 * load-tests/codecs/aac-settings: the evidence behind the AAC encoder settings (ffmpeg-aac-pool.ts). For
 * each candidate set of ffmpeg `aac` options: its cost — instructions per 10 s of the demo voice, counted
 * by valgrind's callgrind (immune to the noise of a shared machine; skipped when valgrind is missing) —
 * and how much speech survives it: sentences of FLORES-200 Bambara (../shared/data) spoken by the demo
 * voice, encoded, uploaded to a Kuma process with the demo ASR, transcribed. The demo ASR tells letters
 * apart by their formants, so smearing them shows up as wrong letters. MP3 48k and WAV are the references.
 * Run: `npm run bench:aac-settings [-- --sentences 40 --no-write]`.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DEMO_SYMBOLS, speakDemo } from '../../models/generator/demo-voice.js';
import { startModelServer } from '../model-server.js';
import { recordSection } from '../results.js';
import { resolveFfmpegPath } from '../../src/codecs/encoders/ffmpeg-aac-pool.js';

const { values } = parseArgs({ options: { sentences: { type: 'string', default: '40' }, 'no-write': { type: 'boolean', default: false } } });
const RATE = 24000;
/** The ffmpeg Kuma's AAC pool runs (encoders differ between ffmpeg versions). */
const FFMPEG = resolveFfmpegPath(process.env.KUMA_FFMPEG_PATH);
const FLORES = path.resolve('../shared/data/flores200-bam-fra/flores.bam_Latn.txt');

const aac = (bitrate: string, ...extra: string[]): string[] => ['-c:a', 'aac', '-aac_coder', 'fast', ...extra, '-b:a', bitrate, '-f', 'adts'];
/** ffmpeg's VBR mode: a fixed quality (-q:a) instead of a bitrate the encoder keeps re-quantizing frames to meet. */
const aacVbr = (quality: string, ...extra: string[]): string[] => ['-c:a', 'aac', '-aac_coder', 'fast', ...extra, '-q:a', quality, '-f', 'adts'];
const CANDIDATES: Array<{ name: string; args: string[] }> = [
  { name: 'aac 48k', args: aac('48k') },
  { name: 'aac 48k, no TNS', args: aac('48k', '-aac_tns', '0') },
  { name: 'aac 40k', args: aac('40k') },
  { name: 'aac 40k, no TNS', args: aac('40k', '-aac_tns', '0') },
  { name: 'aac 40k, no TNS/PNS', args: aac('40k', '-aac_tns', '0', '-aac_pns', '0') },
  { name: 'aac 36k, no TNS/PNS', args: aac('36k', '-aac_tns', '0', '-aac_pns', '0') },
  { name: 'aac 32k', args: aac('32k') },
  { name: 'aac 32k, no TNS/PNS', args: aac('32k', '-aac_tns', '0', '-aac_pns', '0') },
  { name: 'aac VBR q 0.5, no TNS/PNS', args: aacVbr('0.5', '-aac_tns', '0', '-aac_pns', '0') },
  { name: 'aac VBR q 0.6, no TNS/PNS', args: aacVbr('0.6', '-aac_tns', '0', '-aac_pns', '0') },
  { name: 'aac VBR q 0.7, no TNS/PNS (Kuma)', args: aacVbr('0.7', '-aac_tns', '0', '-aac_pns', '0') },
  { name: 'aac VBR q 0.6', args: aacVbr('0.6') },
  { name: 'mp3 48k (reference)', args: ['-c:a', 'libmp3lame', '-b:a', '48k', '-f', 'mp3'] },
  { name: 'wav (reference)', args: ['-f', 'wav'] },
];

/** The first words of each line, reduced to what the demo voice can speak. */
const sentences = fs
  .readFileSync(FLORES, 'utf8')
  .split('\n')
  .slice(0, Number(values.sentences))
  .map((line) =>
    [...line.toLowerCase()]
      .filter((c) => DEMO_SYMBOLS.includes(c))
      .join('')
      .replace(/ +/g, ' ')
      .trim()
      .split(' ')
      .slice(0, 8)
      .join(' '),
  )
  .filter((line) => line.length > 0);

function s16(samples: Float32Array): Buffer {
  const out = Buffer.alloc(samples.length * 2);
  samples.forEach((v, i) => out.writeInt16LE(Math.round(Math.max(-1, Math.min(1, v)) * 32767), i * 2));
  return out;
}

function encode(args: string[], pcm: Buffer, tool: string[] = []): Buffer {
  const command = [...tool, FFMPEG, '-hide_banner', '-loglevel', 'error', '-f', 's16le', '-ar', String(RATE), '-ac', '1', '-i', 'pipe:0', ...args, 'pipe:1'];
  const run = spawnSync(command[0]!, command.slice(1), { input: pcm, maxBuffer: 1 << 28 });
  if (run.status !== 0) throw new Error(`${command.join(' ')} failed: ${run.stderr.toString()}`);
  return run.stdout;
}

function hasValgrind(): boolean {
  return spawnSync('valgrind', ['--version']).status === 0;
}

/** Instructions ffmpeg executes to encode `pcm` with `args` (start-up included; the same for every row). */
function instructions(args: string[], pcm: Buffer): number {
  const out = path.join(fs.mkdtempSync('/tmp/kuma-cg-'), 'callgrind.out');
  const command = [
    'valgrind',
    '--tool=callgrind',
    `--callgrind-out-file=${out}`,
    FFMPEG,
    '-hide_banner',
    '-loglevel',
    'error',
    '-f',
    's16le',
    '-ar',
    String(RATE),
    '-ac',
    '1',
    '-i',
    'pipe:0',
    ...args,
    '-y',
    '/dev/null',
  ];
  const run = spawnSync(command[0]!, command.slice(1), { input: pcm, maxBuffer: 1 << 28 });
  fs.rmSync(path.dirname(out), { recursive: true, force: true });
  const collected = /Collected\s*:\s*(\d+)/.exec(run.stderr.toString());
  if (!collected) throw new Error(`callgrind gave no count: ${run.stderr.toString().slice(-500)}`);
  return Number(collected[1]);
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length]!;
}

// Costs first: callgrind runs synchronously for seconds, which would stall the HTTP client's sockets.
const costInput = s16(speakDemo(sentences.join(' ').repeat(4), RATE).samples.subarray(0, 10 * RATE));
const costs = CANDIDATES.map((candidate) => (hasValgrind() ? (instructions(candidate.args, costInput) / 1e6).toFixed(0) : 'n/a'));

const server = await startModelServer([{ id: 'sunjata-1', engine: 'ctc-wav2vec2', dir: path.resolve('models/demo/ctc-wav2vec2'), replicas: 1 }]);
async function transcribe(bytes: Buffer): Promise<string> {
  const form = new FormData();
  form.append('model', 'sunjata-1');
  form.append('file', new Blob([bytes]), 'speech.bin');
  const res = await fetch(`http://127.0.0.1:${server.port}/openai/v1/audio/transcriptions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.apiKey}` },
    body: form,
  });
  const body = (await res.json()) as { text?: string };
  if (res.status !== 200 || typeof body.text !== 'string') throw new Error(`transcription failed (${res.status}): ${JSON.stringify(body)}`);
  return body.text;
}

const rows = ['| settings | instructions per 10 s (M) | kbit/s | sentences exact | character error rate |', '|---|---:|---:|---:|---:|'];
try {
  for (const [index, candidate] of CANDIDATES.entries()) {
    let exact = 0;
    let errors = 0;
    let characters = 0;
    let bytes = 0;
    let seconds = 0;
    for (const text of sentences) {
      const speech = speakDemo(text, RATE).samples;
      const encoded = encode(candidate.args, s16(speech));
      bytes += encoded.length;
      seconds += speech.length / RATE;
      const heard = await transcribe(encoded);
      if (heard === text) exact++;
      errors += editDistance(heard, text);
      characters += text.length;
    }
    rows.push(
      `| ${candidate.name} | ${costs[index]} | ${((bytes * 8) / seconds / 1000).toFixed(1)} | ${exact}/${sentences.length} | ${((100 * errors) / characters).toFixed(2)} % |`,
    );
    process.stdout.write(rows.at(-1)! + '\n');
  }
} finally {
  await server.stop();
}
recordSection(
  'codecs — AAC settings',
  [
    `ffmpeg: ${FFMPEG}; every AAC row with -aac_coder fast. Cost: valgrind --tool=callgrind instruction count for encoding 10 s of the demo voice (includes ffmpeg start-up, the same for every row).`,
    `Speech kept: ${sentences.length} sentences (first words of FLORES-200 Bambara lines, letters the demo voice speaks), 24 kHz demo voice → ffmpeg → upload to Kuma with the demo wav2vec2 ASR → transcript compared with the text.`,
  ],
  rows,
  !values['no-write'],
);
