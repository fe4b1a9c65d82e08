/**
 * load-tests/decoder: what running upload decoding in the DecoderPool costs over decoding on the calling
 * thread (the baseline, measured in the same run): the pool's first start (a child process with its
 * loader and WASM), and per upload the time to the last window for short and long uploads in small and
 * large windows (per-window IPC). Run: `npm run bench:decoder [-- --no-write]`.
 */
import { parseArgs } from 'node:util';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { decodeAudioStream } from '../../src/codecs/decode/decode-stream.js';
import { DecoderPool } from '../../src/codecs/decode/decoder-pool.js';
import { percentile, recordSection } from '../results.js';

const { values } = parseArgs({ options: { 'no-write': { type: 'boolean', default: false }, rounds: { type: 'string', default: '7' } } });
const ROUNDS = Number(values.rounds);

const ffmpeg = (createRequire(import.meta.url)('@ffmpeg-installer/ffmpeg') as { path: string }).path;
/** `seconds` of a chirp as a 44.1 kHz mono MP3 (the common upload), encoded by ffmpeg. */
function mp3(seconds: number): Uint8Array {
  const r = spawnSync(
    ffmpeg,
    [
      '-hide_banner',
      '-loglevel',
      'error',
      '-f',
      'lavfi',
      '-i',
      `sine=frequency=300:sample_rate=44100:duration=${seconds}`,
      '-c:a',
      'libmp3lame',
      '-b:a',
      '64k',
      '-f',
      'mp3',
      'pipe:1',
    ],
    { maxBuffer: 1 << 28 },
  );
  if (r.status !== 0) throw new Error(String(r.stderr));
  return new Uint8Array(r.stdout);
}

async function inThread(bytes: Uint8Array, windowSamples: number): Promise<number> {
  const t = performance.now();
  for await (const _e of decodeAudioStream(bytes, { targetRate: 16000, windowSamples })) void _e;
  return performance.now() - t;
}

async function pooled(pool: DecoderPool, bytes: Uint8Array, windowSamples: number): Promise<number> {
  const t = performance.now();
  const stream = await pool.open(bytes.slice(), { targetRate: 16000, windowSamples });
  for await (const _w of stream) void _w;
  return performance.now() - t;
}

const cases = [
  { name: '5 s mp3, 10 s windows', bytes: mp3(5), windowSamples: 160_000 },
  { name: '600 s mp3, 10 s windows', bytes: mp3(600), windowSamples: 160_000 },
  { name: '600 s mp3, 1 s windows', bytes: mp3(600), windowSamples: 16_000 },
];

const tStart = performance.now();
const pool = new DecoderPool({ size: 1 });
await pooled(pool, cases[0]!.bytes, 160_000);
const firstMs = performance.now() - tStart;
await inThread(cases[0]!.bytes, 160_000); // warm the in-thread WASM too

const rows: string[] = [];
for (const c of cases) {
  const base: number[] = [];
  const pool_: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    base.push(await inThread(c.bytes, c.windowSamples));
    pool_.push(await pooled(pool, c.bytes, c.windowSamples));
  }
  const b = percentile(base, 50);
  const p = percentile(pool_, 50);
  const windows = Math.ceil(((c.name.startsWith('5 s') ? 5 : 600) * 16000) / c.windowSamples);
  rows.push(
    `| ${c.name} | ${(c.bytes.length / 1024).toFixed(0)} KB | ${b.toFixed(1)} | ${p.toFixed(1)} | ${(p / b).toFixed(2)}× | ${((p - b) / windows).toFixed(2)} |`,
  );
}
await pool.close();

recordSection(
  'decoder pool overhead',
  [
    `Rounds: ${ROUNDS} per case; one pool child; baseline: the same decode on the calling thread, same run`,
    `First upload through a new pool (start + decode of 5 s): ${firstMs.toFixed(0)} ms`,
  ],
  ['| upload | size | in-thread p50 ms | pool p50 ms | ratio | overhead ms per window |', '|---|---|---|---|---|---|', ...rows],
  !values['no-write'],
);
