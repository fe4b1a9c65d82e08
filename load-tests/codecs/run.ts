/**
 * load-tests/codecs: for each of the 13 speech formats, Kuma's streaming encoder speed (× real time on
 * one core) and first-chunk latency (ms from pushing the first 20 ms PCM chunk to the first bytes out),
 * beside ffmpeg encoding the same 24 kHz speech-like input in the same run. Appends the table to
 * load-tests/RESULTS.md. Run: `npm run bench:codecs [-- --seconds 30 --no-write]`.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { SPEECH_FORMATS, type SpeechFormat } from '../../src/codecs/types.js';
import { createEncoder } from '../../src/codecs/encoders/index.js';
import { formatInfo } from '../../src/codecs/formats.js';
import { closeSharedAacPool, sharedAacPool } from '../../src/codecs/encoders/ffmpeg-aac-pool.js';
import { speakDemo } from '../../models/generator/demo-voice.js';
import { recordSection } from '../results.js';
import { FFMPEG_FORMAT_ARGS, ffmpegBinary } from './ffmpeg-formats.js';

const RATE = 24000;
const CHUNK = 480; // 20 ms: the first-chunk latency is measured from the first 20 ms chunk
/** Speed is measured in the slices the speech pipeline pushes (src/voice/speech-stream.ts: 100 ms). */
const SPEED_CHUNK = 2400;
/** Whole-stream encodes per format; the table shows the median (a shared 2-core machine is noisy). */
const SPEED_RUNS = 5;
/** ffmpeg runs per format for the baseline columns (medians): the control for how busy the machine is. */
const FFMPEG_RUNS = 3;

const { values } = parseArgs({
  options: { seconds: { type: 'string', default: '30' }, 'no-write': { type: 'boolean', default: false }, repeats: { type: 'string', default: '5' } },
});
const seconds = Number(values.seconds);
const repeats = Number(values.repeats);

function speechLike(totalSeconds: number): Float32Array {
  const text = 'i ni ce a ka kɛnɛ wa n bɛ taa sugu la ɔ ɲɔ ŋa ';
  const out = new Float32Array(Math.round(totalSeconds * RATE));
  let offset = 0;
  while (offset < out.length) {
    const piece = speakDemo(text, RATE).samples;
    out.set(piece.subarray(0, Math.min(piece.length, out.length - offset)), offset);
    offset += piece.length;
  }
  return out;
}

const input = speechLike(seconds);
const s16 = Buffer.alloc(input.length * 2);
input.forEach((v, i) => s16.writeInt16LE(Math.round(Math.max(-1, Math.min(1, v)) * 32767), i * 2));

/** utime + stime of a child process in seconds, from /proc (Linux; 0 when unreadable). */
function childCpuSeconds(pid: number): number {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // USER_HZ is 100 on Linux
  } catch {
    return 0;
  }
}

/**
 * Whole-stream encode in 100 ms pushes. CPU ×RT counts this process plus, for aac/fmp4, the ffmpeg
 * process the encoder took from the pool (read just before flush, while it still exists): the codec's
 * work on one core whichever process does it. Wall ×RT also includes waiting on ffmpeg round trips.
 */
async function kumaSpeed(format: SpeechFormat): Promise<{ xrtCpu: number; xrtWall: number; bytes: number }> {
  const before = new Set(sharedAacPool().pids().inUse);
  const encoder = await createEncoder(format, { inputRate: RATE });
  const child = sharedAacPool()
    .pids()
    .inUse.find((pid) => !before.has(pid));
  const childCpu0 = child ? childCpuSeconds(child) : 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let bytes = 0;
  for (let i = 0; i < input.length; i += SPEED_CHUNK) bytes += (await encoder.push(input.subarray(i, i + SPEED_CHUNK))).length;
  const childCpu = child ? childCpuSeconds(child) - childCpu0 : 0;
  bytes += (await encoder.flush()).length;
  const wall = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return { xrtCpu: seconds / ((cpu.user + cpu.system) / 1e6 + childCpu), xrtWall: seconds / wall, bytes };
}

/**
 * First-chunk latency, median of repeats on fresh encoders, pushing 20 ms chunks back to back (as a TTS
 * engine hands them over): `anyMs` to the first bytes of any kind (container headers count), `audioMs` to
 * the first bytes produced once one codec frame of audio is in (two frames for AAC, whose encoder primes).
 */
async function kumaFirstChunk(format: SpeechFormat): Promise<{ anyMs: number; audioMs: number }> {
  const info = formatInfo(format);
  const frameAtInput = Math.ceil((info.frameSamples * (format === 'aac' || format === 'fmp4' ? 2 : 1) * RATE) / info.sampleRate);
  const any: number[] = [];
  const audio: number[] = [];
  for (let r = 0; r < repeats; r++) {
    const encoder = await createEncoder(format, { inputRate: RATE });
    const t0 = performance.now();
    let firstAny = -1;
    for (let i = 0; i < input.length; i += CHUNK) {
      const out = await encoder.push(input.subarray(i, i + CHUNK));
      if (out.length === 0) continue;
      const now = performance.now() - t0;
      if (firstAny < 0) firstAny = now;
      if (i + CHUNK >= frameAtInput) {
        audio.push(now);
        break;
      }
    }
    any.push(firstAny);
    encoder.close();
  }
  return { anyMs: median(any), audioMs: median(audio) };
}

/** ffmpeg: spawn, pipe s16le in, time to the first stdout bytes and to exit. */
function ffmpegRun(format: SpeechFormat): Promise<{ firstMs: number; xrtWall: number } | null> {
  const args = FFMPEG_FORMAT_ARGS[format];
  if (!args) return Promise.resolve(null);
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let first = -1;
    const child = spawn(ffmpegBinary(), [
      '-hide_banner',
      '-loglevel',
      'error',
      '-probesize',
      '32',
      '-analyzeduration',
      '0',
      '-fflags',
      '+nobuffer',
      '-f',
      's16le',
      '-ar',
      String(RATE),
      '-ac',
      '1',
      '-i',
      'pipe:0',
      ...args,
      'pipe:1',
    ]);
    child.stdout.on('data', () => {
      if (first < 0) first = performance.now() - t0;
    });
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve({ firstMs: first, xrtWall: seconds / ((performance.now() - t0) / 1000) }) : reject(new Error(`ffmpeg ${format} exited ${code}`)),
    );
    child.stdin.end(s16);
  });
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function main(): Promise<void> {
  // Warm what a running server has warm: the wasm modules and the AAC process pool.
  for (const format of SPEECH_FORMATS) (await createEncoder(format, { inputRate: RATE })).close();
  await sharedAacPool().ready();
  await new Promise((r) => setTimeout(r, 500));

  const rows: string[] = [
    '| format | Kuma ×RT (CPU, one core; aac/fmp4 incl. ffmpeg) | best run | Kuma ×RT (wall) | Kuma first bytes ms | Kuma first audio ms | target (first audio) | ffmpeg ×RT (wall, incl. spawn) | ffmpeg first bytes ms (incl. spawn) |',
    '|---|---:|---:|---:|---:|---:|---|---:|---:|',
  ];
  for (const format of SPEECH_FORMATS) {
    const runs: Array<Awaited<ReturnType<typeof kumaSpeed>>> = [];
    await kumaSpeed(format); // untimed: a server has its encoders' code compiled (JIT) after its first streams
    for (let r = 0; r < SPEED_RUNS; r++) runs.push(await kumaSpeed(format));
    const speed = {
      xrtCpu: median(runs.map((run) => run.xrtCpu)),
      best: Math.max(...runs.map((run) => run.xrtCpu)),
      xrtWall: median(runs.map((run) => run.xrtWall)),
    };
    const first = await kumaFirstChunk(format);
    const ffRuns: Array<{ firstMs: number; xrtWall: number }> = [];
    for (let r = 0; r < FFMPEG_RUNS; r++) {
      const run = await ffmpegRun(format).catch(() => null);
      if (run) ffRuns.push(run);
    }
    const ff = ffRuns.length > 0 ? { xrtWall: median(ffRuns.map((run) => run.xrtWall)), firstMs: median(ffRuns.map((run) => run.firstMs)) } : null;
    const target = format === 'aac' || format === 'fmp4' ? '≥50×, ≤60 ms' : '≥50×, ≤10 ms';
    const ok = speed.xrtCpu >= 50 && first.audioMs <= (format === 'aac' || format === 'fmp4' ? 60 : 10) ? 'met' : 'MISSED';
    rows.push(
      `| ${format} | ${speed.xrtCpu.toFixed(0)} | ${speed.best.toFixed(0)} | ${speed.xrtWall.toFixed(0)} | ${first.anyMs.toFixed(2)} | ${first.audioMs.toFixed(2)} | ${target} (${ok}) | ${ff ? ff.xrtWall.toFixed(0) : 'n/a'} | ${ff ? ff.firstMs.toFixed(1) : 'n/a'} |`,
    );
    process.stdout.write(rows.at(-1)! + '\n');
  }
  await closeSharedAacPool();
  const notes = [
    `Input: ${seconds} s of the demo voice at 24 kHz mono; speed with 100 ms pushes (the speech pipeline's slice), median (and best) of ${SPEED_RUNS} whole-stream encodes after one untimed one — the target is judged on the median; first-chunk latency is the median of ${repeats} fresh encoders (warm wasm and warm AAC pool), pushing chunks back to back: first bytes of any kind (headers count), and first bytes once a codec frame of audio is in (two for AAC, whose encoder primes one frame).`,
    "CPU is this whole Node process (all its threads, process.cpuUsage); for aac/fmp4 the encoding runs in a pooled ffmpeg process whose CPU (from /proc) is added; the wall column also includes the waits on its round trips. Kuma's AAC: -q:a 0.7 (VBR) -aac_coder fast -aac_tns 0 -aac_pns 0; the ffmpeg baseline uses the same settings.",
    `ffmpeg: ${ffmpegBinary()} ${process.env.KUMA_FFMPEG_PATH ? '' : '(system ffmpeg if on PATH, else the npm static build)'}, median of ${FFMPEG_RUNS} runs, one process per run with -probesize 32 -analyzeduration 0 -fflags +nobuffer; its times include the process start, which is what a per-request ffmpeg would cost.`,
  ];
  recordSection('codecs', notes, rows, !values['no-write']);
}

await main();
