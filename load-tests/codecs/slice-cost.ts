/**
 * load-tests/codecs/slice-cost: what one push() of a 0.1 s slice (the speech pipeline's slice, see
 * src/voice/speech-stream.ts) costs the calling thread, for each of the 13 speech formats, at the two
 * rates the TTS models speak (16 kHz and 22.05 kHz, resampled by the encoder). This is the figure that
 * decides which formats the encoder worker pool takes off the I/O thread (issue 16: "more than a few
 * hundred µs per slice").
 *
 * Main-thread cost = the event loop's active time (performance.eventLoopUtilization) over the encode,
 * divided by the slices pushed: for an in-thread encoder that is its CPU; for aac/fmp4 it leaves out the
 * ffmpeg process and the waits on it (the loop is idle then), which is the part the I/O thread pays. For
 * the pooled formats a second column shows the same through createEncoder(), i.e. the encoder pool: what
 * is left on the I/O thread is the round trip (copy, post, reply).
 * Run: `npm run bench:codecs:slices [-- --seconds 20 --no-write]`.
 */
import { parseArgs } from 'node:util';
import { SPEECH_FORMATS, type SpeechFormat, type StreamingEncoder } from '../../src/codecs/types.js';
import { createEncoder } from '../../src/codecs/encoders/index.js';
import { createInThreadEncoder } from '../../src/codecs/encoders/in-thread.js';
import { closeSharedEncoderPool, POOLED_FORMATS, sharedEncoderPool } from '../../src/codecs/encode-pool/shared-pool.js';
import { closeSharedAacPool, sharedAacPool } from '../../src/codecs/encoders/ffmpeg-aac-pool.js';
import { recordSection } from '../results.js';
import { loopActiveMs, speechAt } from './bench-helpers.js';

const RATES = [16000, 22050] as const;
const SLICE_SECONDS = 0.1;
const RUNS = 5;

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '20' }, 'no-write': { type: 'boolean', default: false } } });
const seconds = Number(values.seconds);

/** One whole stream in 0.1 s slices; returns the main thread's µs per slice. */
async function streamCost(format: SpeechFormat, rate: number, input: Float32Array, create = createInThreadEncoder): Promise<number> {
  const slice = Math.round(rate * SLICE_SECONDS);
  let encoder: StreamingEncoder | undefined;
  let slices = 0;
  const active = await loopActiveMs(async () => {
    encoder = await create(format, { inputRate: rate });
    for (let i = 0; i < input.length; i += slice, slices++) await encoder.push(input.subarray(i, i + slice));
    await encoder.flush();
  });
  encoder?.close();
  return (active * 1000) / slices;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function main(): Promise<void> {
  for (const format of SPEECH_FORMATS) (await createInThreadEncoder(format, { inputRate: 16000 })).close();
  await sharedAacPool().ready();
  sharedEncoderPool()?.warm();
  const inputs = new Map(RATES.map((rate) => [rate, speechAt(rate, seconds)]));
  const rows = [
    '| format | in-thread µs per slice, 16 kHz in | in-thread, 22.05 kHz in | over 300 µs? | pooled µs per slice, 16 kHz in | pooled, 22.05 kHz in |',
    '|---|---:|---:|---|---:|---:|',
  ];
  /** Median µs per slice at each rate, after one untimed stream (JIT and wasm warm, as in a running server). */
  const measure = async (
    format: SpeechFormat,
    create: (format: SpeechFormat, options: { inputRate: number }) => Promise<StreamingEncoder>,
  ): Promise<number[]> => {
    const cells: number[] = [];
    for (const rate of RATES) {
      await streamCost(format, rate, inputs.get(rate)!, create);
      const runs: number[] = [];
      for (let r = 0; r < RUNS; r++) runs.push(await streamCost(format, rate, inputs.get(rate)!, create));
      cells.push(median(runs));
    }
    return cells;
  };
  for (const format of SPEECH_FORMATS) {
    const direct = await measure(format, createInThreadEncoder);
    const pooled = POOLED_FORMATS.has(format) && sharedEncoderPool() ? (await measure(format, createEncoder)).map((v) => v.toFixed(0)) : ['—', '—'];
    rows.push(
      `| ${format} | ${direct[0]!.toFixed(0)} | ${direct[1]!.toFixed(0)} | ${Math.max(...direct) > 300 ? 'yes' : 'no'} | ${pooled[0]} | ${pooled[1]} |`,
    );
    process.stdout.write(rows.at(-1)! + '\n');
  }
  await closeSharedAacPool();
  await closeSharedEncoderPool();
  recordSection(
    'codecs — main-thread cost per 0.1 s slice',
    [
      `Input: ${seconds} s of the demo voice at 16 kHz and at 22.05 kHz, pushed in 0.1 s slices (1600 / 2205 samples) into createEncoder(); median of ${RUNS} whole streams (creation and flush included) after one untimed one.`,
      'µs per slice = event-loop active time (performance.eventLoopUtilization) / slices: the work the calling thread does, resampling included; for aac/fmp4 the ffmpeg process and the waits on it are not counted (the loop is idle then).',
      `in-thread: the encoder on the calling thread (createInThreadEncoder); pooled: through createEncoder(), i.e. the encoder worker pool (${sharedEncoderPool()?.size ?? 0} worker thread(s)), for the formats it takes (${[...POOLED_FORMATS].join(', ')}).`,
    ],
    rows,
    !values['no-write'],
  );
}

await main();
