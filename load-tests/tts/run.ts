/**
 * load-tests/tts: POST /audio/speech per format at 1, 10 and 50 concurrent clients, against a Kuma process
 * with the demo models and the default replicas (by cores; the manifest entry does not pin them): time to
 * first byte, the server overhead (TTFB − the engine's time to its first PCM, from Server-Timing), and total
 * throughput per level (requests/s and seconds of audio delivered per second).
 *
 * Targets: overhead at 1 client ≤ 5 ms p50 for pcm/ulaw/alaw/l16/wav, ≤ 15 ms for mp3/opus, ≤ 60 ms for
 * fmp4; TTFB p99 at 50 clients ≤ 100 ms for pcm/ulaw/alaw/l16/wav, ≤ 150 ms for mp3/opus, ≤ 250 ms for
 * fmp4 (issue 16); throughput no lower than the baseline's.
 *
 * `--baseline-dir /path/to/other/checkout` runs the same bench, in the same run and after this one, against
 * that checkout's server (its own code, this checkout's demo model files and manifest entry, so a checkout
 * from before replicas-by-cores runs its old default of one replica) and records the throughput ratios.
 *
 * The clients are plain keep-alive sockets read by a lean HTTP reader (`--client raw`, the default) or fetch
 * (`--client fetch`); fetch's web streams cost a large share of the 2 cores at 50 clients.
 *
 * Run: `npm run bench:tts [-- --baseline-dir ../kuma-main] [--per-client-50 4] [--formats pcm,mp3] [--client raw|fetch] [--no-write]`.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { percentile, recordSection } from '../results.js';
import { startModelServer } from '../model-server.js';
import { headerValue, RawHttpClient } from '../raw-http-client.js';

const { values } = parseArgs({
  options: {
    'no-write': { type: 'boolean', default: false },
    'baseline-dir': { type: 'string' },
    'per-client-50': { type: 'string', default: '4' },
    formats: { type: 'string' },
    client: { type: 'string', default: 'raw' },
  },
});
if (values.client !== 'raw' && values.client !== 'fetch') throw new Error(`--client must be raw or fetch, got ${values.client}`);
const CLIENT = values.client;
const ALL_FORMATS = ['pcm', 'wav', 'ulaw', 'alaw', 'l16_8000', 'l16_16000', 'mp3', 'opus', 'fmp4'] as const;
const FORMATS = values.formats ? values.formats.split(',') : [...ALL_FORMATS];
const OVERHEAD_TARGET: Record<string, number> = { pcm: 5, wav: 5, ulaw: 5, alaw: 5, l16_8000: 5, l16_16000: 5, mp3: 15, opus: 15, fmp4: 60 };
const TTFB_P99_TARGET_50: Record<string, number> = { pcm: 100, wav: 100, ulaw: 100, alaw: 100, l16_8000: 100, l16_16000: 100, mp3: 150, opus: 150, fmp4: 250 };
// 50 clients × 4 requests: with only 2 each, p99 would be the single worst request of the opening burst.
const LEVELS: Array<{ clients: number; perClient: number }> = [
  { clients: 1, perClient: 30 },
  { clients: 10, perClient: 3 },
  { clients: 50, perClient: Number(values['per-client-50']) },
];
const INPUT = 'i ni ce, a ka kɛnɛ wa? n bɛ taa sugu la sini, an bɛ malo ni ji san ka na n fa ni n ba ye.';
// A queue deep enough that 50 clients wait instead of getting 503; replicas left to the default (by cores).
const MODEL = { id: 'jifili-1', engine: 'vits-hf', dir: path.resolve('models/demo/vits-hf'), maxQueue: 256 };

interface Sample {
  ttfb: number;
  engineFirst: number;
  /** Server time from starting the engine job to the first encoded bytes (Server-Timing `first-bytes`). */
  firstBytes: number;
  round?: number;
}

interface Level {
  server: string;
  format: string;
  clients: number;
  samples: Sample[];
  seconds: number;
}

async function bench(server: string, cwd: string | undefined): Promise<Level[]> {
  const hello = await startModelServer([MODEL], cwd);
  const url = `http://127.0.0.1:${hello.port}/openai/v1/audio/speech`;
  const headers = { authorization: `Bearer ${hello.apiKey}`, 'content-type': 'application/json' };
  const timing = (serverTiming: string | undefined, name: string) => Number(new RegExp(`${name};dur=([\\d.]+)`).exec(serverTiming ?? '')?.[1] ?? NaN);
  /** One request on `raw` (a client's own keep-alive socket), or through fetch when the bench runs with --client fetch. */
  const one = async (format: string, raw?: RawHttpClient): Promise<Sample & { bytes: number }> => {
    if (raw) {
      const res = await raw.post({ path: '/openai/v1/audio/speech', headers, body: JSON.stringify({ input: INPUT, response_format: format }) });
      if (res.status !== 200) throw new Error(`${server} ${format}: HTTP ${res.status}`);
      const serverTiming = headerValue(res.head, 'server-timing');
      return { ttfb: res.ttfb, engineFirst: timing(serverTiming, 'engine-first'), firstBytes: timing(serverTiming, 'first-bytes'), bytes: res.bytes };
    }
    const t0 = performance.now();
    const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ input: INPUT, response_format: format }) });
    if (res.status !== 200) throw new Error(`${server} ${format}: HTTP ${res.status} ${await res.text()}`);
    const reader = res.body!.getReader();
    let bytes = (await reader.read()).value?.length ?? 0;
    const ttfb = performance.now() - t0;
    for (let r = await reader.read(); !r.done; r = await reader.read()) bytes += r.value.length;
    const serverTiming = res.headers.get('server-timing') ?? undefined;
    return { ttfb, engineFirst: timing(serverTiming, 'engine-first'), firstBytes: timing(serverTiming, 'first-bytes'), bytes };
  };
  try {
    for (const format of FORMATS) await Promise.all(Array.from({ length: 3 }, () => one(format))); // warm-up (wasm, AAC pool)
    const levels: Level[] = [];
    for (const format of FORMATS) {
      for (const { clients, perClient } of LEVELS) {
        // Warm-up at this level's concurrency (connections, encoder instances), not measured; the measured
        // rounds still start together, so round #0 is a burst of `clients` simultaneous requests.
        const sockets = Array.from({ length: clients }, () => (CLIENT === 'raw' ? new RawHttpClient('127.0.0.1', hello.port) : undefined));
        await Promise.all(sockets.map((raw) => one(format, raw)));
        const samples: Sample[] = [];
        const t0 = performance.now();
        await Promise.all(
          sockets.map(async (raw) => {
            for (let i = 0; i < perClient; i++) samples.push({ ...(await one(format, raw)), round: i });
          }),
        );
        for (const raw of sockets) raw?.close();
        if (clients > 1)
          process.stderr.write(
            `  by round: ${[...new Set(samples.map((s) => s.round))]
              .map((r) => {
                const v = samples.filter((s) => s.round === r).map((s) => s.ttfb);
                return `#${r} p50 ${pct(v, 50).toFixed(0)} max ${Math.max(...v).toFixed(0)}`;
              })
              .join(', ')}\n`,
          );
        levels.push({ server, format, clients, samples, seconds: (performance.now() - t0) / 1000 });
        if (process.env.KUMA_BENCH_WORST)
          for (const s of [...samples].sort((a, b) => b.ttfb - a.ttfb).slice(0, 5))
            process.stderr.write(`  worst: round ${s.round} ttfb ${s.ttfb.toFixed(1)} engine-first ${s.engineFirst} first-bytes ${s.firstBytes}\n`);
        process.stdout.write(
          `${server} ${format} ×${clients}: ${(samples.length / levels.at(-1)!.seconds).toFixed(1)} req/s, TTFB p99 ${pct(
            samples.map((s) => s.ttfb),
            99,
          ).toFixed(1)} ms\n`,
        );
      }
    }
    return levels;
  } finally {
    await hello.stop();
  }
}

const pct = percentile;

/** Seconds of audio one request yields (the same text in every format): its pcm length at 24 kHz s16le. */
async function audioSecondsPerRequest(): Promise<number> {
  const hello = await startModelServer([{ ...MODEL, replicas: 1 }]);
  try {
    const res = await fetch(`http://127.0.0.1:${hello.port}/openai/v1/audio/speech`, {
      method: 'POST',
      headers: { authorization: `Bearer ${hello.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ input: INPUT, response_format: 'pcm' }),
    });
    return (await res.arrayBuffer()).byteLength / (2 * 24000);
  } finally {
    await hello.stop();
  }
}

const audioSeconds = await audioSecondsPerRequest();
const results = [...(await bench('this', undefined)), ...(values['baseline-dir'] ? await bench('baseline', path.resolve(values['baseline-dir'])) : [])];

const rows = [
  '| server | format | clients | requests | TTFB p50 ms | TTFB p99 ms | engine first chunk p50 ms | overhead p50 ms | overhead p99 ms | req/s | audio s/s | target |',
  '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|',
];
for (const level of results) {
  const ttfb = level.samples.map((s) => s.ttfb);
  const overhead = level.samples.map((s) => s.ttfb - s.engineFirst);
  const firstBytes = level.samples.map((s) => s.firstBytes);
  process.stderr.write(
    `${level.server} ${level.format} ×${level.clients}: server first-bytes p50 ${pct(firstBytes, 50).toFixed(1)} p99 ${pct(firstBytes, 99).toFixed(1)} ms, engine first chunk p99 ${pct(
      level.samples.map((s) => s.engineFirst),
      99,
    ).toFixed(1)} ms\n`,
  );
  const rps = level.samples.length / level.seconds;
  let target = '';
  if (level.clients === 1)
    target = `overhead p50 ≤ ${OVERHEAD_TARGET[level.format]} ms (${pct(overhead, 50) <= OVERHEAD_TARGET[level.format]! ? 'met' : 'MISSED'})`;
  if (level.clients === 50)
    target = `TTFB p99 ≤ ${TTFB_P99_TARGET_50[level.format]} ms (${pct(ttfb, 99) <= TTFB_P99_TARGET_50[level.format]! ? 'met' : 'MISSED'})`;
  rows.push(
    `| ${level.server} | ${level.format} | ${level.clients} | ${level.samples.length} | ${pct(ttfb, 50).toFixed(1)} | ${pct(ttfb, 99).toFixed(1)} | ${pct(
      level.samples.map((s) => s.engineFirst),
      50,
    ).toFixed(1)} | ${pct(overhead, 50).toFixed(2)} | ${pct(overhead, 99).toFixed(2)} | ${rps.toFixed(1)} | ${(rps * audioSeconds).toFixed(1)} | ${target} |`,
  );
}
if (values['baseline-dir']) {
  rows.push('', '| format | clients | req/s this / baseline | TTFB p99 this / baseline |', '|---|---:|---:|---:|');
  for (const level of results.filter((l) => l.server === 'this')) {
    const base = results.find((l) => l.server === 'baseline' && l.format === level.format && l.clients === level.clients)!;
    const rate = (l: Level) => l.samples.length / l.seconds;
    const p99 = (l: Level) =>
      pct(
        l.samples.map((s) => s.ttfb),
        99,
      );
    rows.push(`| ${level.format} | ${level.clients} | ${(rate(level) / rate(base)).toFixed(2)} | ${(p99(level) / p99(base)).toFixed(2)} |`);
  }
}

recordSection(
  'tts',
  [
    `Request: ${[...INPUT].length} characters of Bambara text (${audioSeconds.toFixed(2)} s of audio; first phrase ≤ 40 characters), jifili-1 on the demo VITS model (16 kHz, resampled by the encoder), stream_format audio; the client reads the whole body. Replicas: the server's default (by cores), maxQueue 256.`,
    'TTFB: client time from sending the request to the first body bytes. engine first chunk: server time from starting the engine job to its first PCM (Server-Timing `engine-first`), which includes waiting for a replica. overhead = TTFB − engine first chunk: HTTP, JSON, auth, balance check, encoding of the first chunk, socket.',
    'req/s and audio s/s: requests completed (whole bodies read) per second of the level, and the seconds of audio they carried.',
    `Server in its own process; the load generator in this one, on the same machine: ${CLIENT === 'raw' ? 'each client a keep-alive socket read by a lean HTTP reader (load-tests/raw-http-client.ts), so that less of the 2 cores goes to the generator' : 'fetch (undici)'}.${values['baseline-dir'] ? ` Baseline: the checkout at ${values['baseline-dir']}, run after this one with the same model files and manifest entry.` : ''}`,
  ],
  rows,
  !values['no-write'],
);
