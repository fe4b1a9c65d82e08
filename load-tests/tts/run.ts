/**
 * load-tests/tts: time to first byte of POST /audio/speech, per format, at 1, 10 and 50 concurrent clients,
 * against a Kuma process with the demo models; and the server overhead = time to first byte − the engine's
 * time to its first PCM chunk (which the server reports in Server-Timing). Targets for the overhead at 1
 * request: ≤ 5 ms p50 for pcm/ulaw/alaw/l16/wav, ≤ 15 ms for mp3/opus, ≤ 60 ms for fmp4.
 * Run: `npm run bench:tts [-- --no-write]`.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { percentile, recordSection } from '../results.js';
import { startModelServer } from '../model-server.js';

const { values } = parseArgs({ options: { 'no-write': { type: 'boolean', default: false } } });
const FORMATS = ['pcm', 'wav', 'ulaw', 'alaw', 'l16_8000', 'l16_16000', 'mp3', 'opus', 'fmp4'] as const;
const TARGET: Record<string, number> = { pcm: 5, wav: 5, ulaw: 5, alaw: 5, l16_8000: 5, l16_16000: 5, mp3: 15, opus: 15, fmp4: 60 };
const LEVELS: Array<{ clients: number; perClient: number }> = [
  { clients: 1, perClient: 30 },
  { clients: 10, perClient: 3 },
  { clients: 50, perClient: 2 },
];
const INPUT = 'i ni ce, a ka kɛnɛ wa? n bɛ taa sugu la sini, an bɛ malo ni ji san ka na n fa ni n ba ye.';

// A queue deep enough that 50 clients wait instead of getting 503.
const hello = await startModelServer([{ id: 'jifili-1', engine: 'vits-hf', dir: path.resolve('models/demo/vits-hf'), replicas: 1, maxQueue: 256 }]);
const url = `http://127.0.0.1:${hello.port}/openai/v1/audio/speech`;

interface Sample {
  ttfb: number;
  engineFirst: number;
}

async function one(format: string): Promise<Sample> {
  const t0 = performance.now();
  const res = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${hello.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ input: INPUT, response_format: format }) });
  if (res.status !== 200) throw new Error(`${format}: HTTP ${res.status} ${await res.text()}`);
  const reader = res.body!.getReader();
  await reader.read();
  const ttfb = performance.now() - t0;
  while (!(await reader.read()).done);
  const engineFirst = Number(/engine-first;dur=([\d.]+)/.exec(res.headers.get('server-timing') ?? '')?.[1] ?? NaN);
  return { ttfb, engineFirst };
}

const pct = percentile;

for (const format of FORMATS) await Promise.all(Array.from({ length: 3 }, () => one(format))); // warm-up (wasm, AAC pool)
const rows = ['| format | clients | requests | TTFB p50 ms | TTFB p99 ms | engine first chunk p50 ms | overhead p50 ms | overhead p99 ms | target (1 client, p50) |', '|---|---:|---:|---:|---:|---:|---:|---:|---|'];
for (const format of FORMATS) {
  for (const { clients, perClient } of LEVELS) {
    const samples: Sample[] = [];
    await Promise.all(Array.from({ length: clients }, async () => { for (let i = 0; i < perClient; i++) samples.push(await one(format)); }));
    const overhead = samples.map((s) => s.ttfb - s.engineFirst);
    const target = clients === 1 ? `≤ ${TARGET[format]} ms (${pct(overhead, 50) <= TARGET[format]! ? 'met' : 'MISSED'})` : '';
    rows.push(`| ${format} | ${clients} | ${samples.length} | ${pct(samples.map((s) => s.ttfb), 50).toFixed(1)} | ${pct(samples.map((s) => s.ttfb), 99).toFixed(1)} | ${pct(samples.map((s) => s.engineFirst), 50).toFixed(1)} | ${pct(overhead, 50).toFixed(2)} | ${pct(overhead, 99).toFixed(2)} | ${target} |`);
    process.stdout.write(rows.at(-1)! + '\n');
  }
}
await hello.stop();

recordSection(
  'tts',
  [
    `Request: ${[...INPUT].length} characters of Bambara text (first phrase ≤ 40 characters), jifili-1 on the demo VITS model (16 kHz, resampled by the encoder), stream_format audio; the client reads the whole body.`,
    'TTFB: client time from sending the request to the first body bytes. engine first chunk: server time from starting the engine job to its first PCM (Server-Timing `engine-first`), which includes waiting for the one replica. overhead = TTFB − engine first chunk: HTTP, JSON, auth, balance check, encoding of the first chunk, socket.',
    'Server in its own process; the load generator (fetch) in this one, on the same 2 cores.',
  ],
  rows,
  !values['no-write'],
);
