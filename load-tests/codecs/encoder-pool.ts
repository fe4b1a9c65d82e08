/**
 * load-tests/codecs/encoder-pool: the effect of the encoder worker pool, in-thread vs pool in the same run.
 * For each pooled format, `--streams` concurrent streams (default 50) each push `--seconds` of 16 kHz
 * demo speech in 0.1 s slices, awaiting each push as the speech pipeline does; measured per mode:
 * - throughput: seconds of audio encoded per second of wall time (all streams together);
 * - I/O-thread cost: event-loop active time per slice (performance.eventLoopUtilization);
 * - I/O-thread stalls: a 1 ms interval timer's lateness, p99 and max — how late everything else on the
 *   I/O thread (other requests' reads and writes) runs meanwhile;
 * - first bytes: time from the start to each stream's first non-empty output, p50 / p99.
 * Run: `npm run bench:encoder-pool [-- --streams 50 --seconds 3 --threads N --no-write]`.
 */
import { parseArgs } from 'node:util';
import type { SpeechFormat, StreamingEncoder } from '../../src/codecs/types.js';
import { createInThreadEncoder } from '../../src/codecs/encoders/in-thread.js';
import { createPooledEncoder } from '../../src/codecs/encode-pool/pooled-encoder.js';
import { EncoderPool } from '../../src/codecs/encode-pool/encoder-pool.js';
import { defaultEncoderThreads, POOLED_FORMATS } from '../../src/codecs/encode-pool/shared-pool.js';
import { percentile, recordSection } from '../results.js';
import { loopActiveMs, speechAt } from './bench-helpers.js';

const RATE = 16000;
const SLICE = RATE / 10;

const { values } = parseArgs({
  options: {
    streams: { type: 'string', default: '50' },
    seconds: { type: 'string', default: '3' },
    threads: { type: 'string' },
    'no-write': { type: 'boolean', default: false },
  },
});
const streams = Number(values.streams);
const seconds = Number(values.seconds);
const poolThreads = values.threads === undefined ? defaultEncoderThreads() : Number(values.threads);
if (!(poolThreads > 0)) throw new Error('--threads 0: there is no pool to compare with');
// A pool of its own, as a server builds one (codecs/encoders/speech-encoders.ts).
const pool = new EncoderPool({ size: poolThreads, warmFormats: [...POOLED_FORMATS] });
pool.warm();
const input = speechAt(RATE, seconds);

type Create = (format: SpeechFormat) => Promise<StreamingEncoder>;

interface Result {
  xrt: number;
  usPerSlice: number;
  delayP99: number;
  delayMax: number;
  firstP50: number;
  firstP99: number;
}

/**
 * A 1 ms interval timer recording how late each tick is. (monitorEventLoopDelay records nothing while the
 * loop never turns — which is exactly the in-thread case, a chain of microtasks — so it would show 0.)
 */
function stallProbe(): { stop(): number[] } {
  const lateness: number[] = [];
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    lateness.push(Math.max(0, now - last - 1));
    last = now;
  }, 1);
  return {
    stop() {
      clearInterval(timer);
      lateness.push(Math.max(0, performance.now() - last - 1)); // a stall that lasted until the end
      return lateness;
    },
  };
}

async function run(format: SpeechFormat, create: Create): Promise<Result> {
  const firsts: number[] = [];
  let slices = 0;
  const t0 = performance.now();
  const probe = stallProbe();
  const active = await loopActiveMs(async () => {
    await Promise.all(
      Array.from({ length: streams }, async () => {
        const encoder = await create(format);
        try {
          let first = true;
          for (let i = 0; i < input.length; i += SLICE, slices++) {
            const bytes = await encoder.push(input.subarray(i, i + SLICE));
            if (first && bytes.length > 0) {
              firsts.push(performance.now() - t0);
              first = false;
            }
          }
          await encoder.flush();
        } finally {
          encoder.close();
        }
      }),
    );
  });
  const stalls = probe.stop();
  const wall = (performance.now() - t0) / 1000;
  return {
    xrt: (streams * seconds) / wall,
    usPerSlice: (active * 1000) / slices,
    delayP99: percentile(stalls, 99),
    delayMax: Math.max(...stalls),
    firstP50: percentile(firsts, 50),
    firstP99: percentile(firsts, 99),
  };
}

const modes: Array<[string, Create]> = [
  ['in-thread', (format) => createInThreadEncoder(format, { inputRate: RATE })],
  ['pool', (format) => createPooledEncoder(pool, format, { inputRate: RATE })],
];
const rows = [
  '| format | mode | audio s per wall s | I/O-thread µs per slice | I/O-thread stall p99 ms | max ms | first bytes p50 ms | p99 ms |',
  '|---|---|---:|---:|---:|---:|---:|---:|',
];
for (const format of POOLED_FORMATS) {
  for (const [, create] of modes) await run(format, create); // untimed warm-up of both paths
  for (const [mode, create] of modes) {
    const r = await run(format, create);
    rows.push(
      `| ${format} | ${mode} | ${r.xrt.toFixed(0)} | ${r.usPerSlice.toFixed(0)} | ${r.delayP99.toFixed(1)} | ${r.delayMax.toFixed(1)} | ${r.firstP50.toFixed(1)} | ${r.firstP99.toFixed(1)} |`,
    );
    process.stdout.write(rows.at(-1)! + '\n');
  }
}
const threads = pool.size;
await pool.close();
recordSection(
  'codecs — encoder pool vs in-thread',
  [
    `${streams} concurrent streams × ${seconds} s of demo speech at 16 kHz, 0.1 s slices, each push awaited (as the speech pipeline does); pool: ${threads} worker thread(s) (KUMA_ENCODER_THREADS or the default, half the cores, 1–4); both modes in this run, one after the other, after an untimed warm-up of each.`,
    `I/O-thread µs per slice = event-loop active time / slices; stall = lateness of a 1 ms interval timer's ticks over the run: how late any other callback on that thread (another request's I/O) would have run; first bytes = from the start of the run to each stream's first non-empty output.`,
  ],
  rows,
  !values['no-write'],
);
