/**
 * load-tests/tts-socket: the streaming speech socket against POST /audio/speech (the baseline) for the same
 * text, on the same server in the same run, at 1, 10 and 50 concurrent clients:
 *
 *   - rest:   POST /audio/speech with the whole text (stream_format audio), the client reads the whole body;
 *   - socket: the whole text in one message, then {"text": ""};
 *   - words:  the text word by word, one message every `--word-ms` (default 20 ms, an LLM's token pace),
 *             then {"text": ""}.
 *
 * Time to first audio: from the request (rest) or the first text message (socket, words) to the first audio
 * bytes. Completion: to the end of the body / to {"isFinal": true}. Throughput: seconds of audio delivered
 * per second of the level. Recorded with the ratios socket / rest (first audio, throughput), which are what
 * compares across machines.
 *
 * `--dir DIR --engine vits-hf|vits-sherpa|vits-piper` serves another voice (e.g. the real-size pack's
 * mms-tts-vits: `--dir ~/.cache/kuma/real-size/mms-tts-vits`), `--levels 1,10,50`. Every run also measures
 * the model-only time of the text's first phrase: raw onnxruntime-node on the same file with one intra-op
 * thread (what a TTS replica has), fed the token ids Kuma's phrase plan gives that phrase (median of 9);
 * first audio minus that time is what Kuma adds before a caller hears something.
 *
 * Run: `npm run bench:tts-socket [-- --format pcm] [--word-ms 20] [--dir DIR --engine vits-hf] [--no-write]`.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { percentile, recordSection } from '../results.js';
import { startModelServer } from '../model-server.js';
import { firstPhraseModelOnlyMs } from './first-phrase.js';

const { values } = parseArgs({
  options: {
    'no-write': { type: 'boolean', default: false },
    format: { type: 'string', default: 'pcm' },
    'word-ms': { type: 'string', default: '20' },
    dir: { type: 'string' },
    engine: { type: 'string', default: 'vits-hf' },
    levels: { type: 'string', default: '1,10,50' },
  },
});
const FORMAT = values.format!;
const WORD_MS = Number(values['word-ms']);
const PER_CLIENT: Record<number, number> = { 1: 10, 10: 3, 50: 2 };
const LEVELS = values.levels.split(',').map((c) => ({ clients: Number(c), perClient: PER_CLIENT[Number(c)] ?? 2 }));
const INPUT = 'i ni ce, a ka kɛnɛ wa? n bɛ taa sugu la sini, an bɛ malo ni ji san ka na n fa ni n ba ye.';
const DIR = path.resolve(values.dir ?? 'models/demo/vits-hf');
const MODEL = { id: 'jifili-1', engine: values.engine, dir: DIR, maxQueue: 256 };
const voice = values.dir ? `${path.basename(DIR)} (${values.engine})` : 'the demo VITS model';
type Mode = 'rest' | 'socket' | 'words';

interface Sample {
  firstAudioMs: number;
  doneMs: number;
  bytes: number;
  /** How far the audio ran behind real-time playback from its first bytes, at worst (pcm-like formats). */
  stallMs: number;
}

const pcmBytesPerSecond: Record<string, number> = { pcm: 48000, l16_16000: 32000, l16_8000: 16000, ulaw: 8000, alaw: 8000 };

/** Tracks arrivals against real-time playback from the first audio: the most they ran behind it. */
function playback(t0: number) {
  let first = NaN;
  let bytes = 0;
  let stall = 0;
  const rate = pcmBytesPerSecond[FORMAT];
  return {
    arrived(n: number) {
      const now = performance.now();
      if (Number.isNaN(first)) first = now;
      // Playback from `first` needs these bytes once the `bytes` before them are played: later is behind.
      else if (rate) stall = Math.max(stall, now - (first + (bytes / rate) * 1000));
      bytes += n;
    },
    sample: (): Sample => ({ firstAudioMs: first - t0, doneMs: performance.now() - t0, bytes, stallMs: rate ? stall : NaN }),
  };
}

const modelOnlyMs = await firstPhraseModelOnlyMs(values.engine!, DIR, INPUT);
process.stdout.write(`model only, first phrase: ${modelOnlyMs.toFixed(1)} ms\n`);
const hello = await startModelServer([MODEL]);
const base = `127.0.0.1:${hello.port}/openai/v1`;

async function rest(): Promise<Sample> {
  const t0 = performance.now();
  const res = await fetch(`http://${base}/audio/speech`, {
    method: 'POST',
    headers: { authorization: `Bearer ${hello.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ input: INPUT, response_format: FORMAT }),
  });
  if (res.status !== 200) throw new Error(`rest: HTTP ${res.status} ${await res.text()}`);
  const reader = res.body!.getReader();
  const play = playback(t0);
  for (let r = await reader.read(); !r.done; r = await reader.read()) play.arrived(r.value.length);
  return play.sample();
}

function socket(wordByWord: boolean): Promise<Sample> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://${base}/audio/speech/stream?output_format=${FORMAT}`, { headers: { authorization: `Bearer ${hello.apiKey}` } });
    let play = playback(0);
    ws.on('message', (data) => {
      const message = JSON.parse(data.toString());
      if (message.audio) {
        play.arrived(Buffer.byteLength(message.audio, 'base64'));
      } else if (message.isFinal) {
        resolve(play.sample());
      } else if (message.error) {
        reject(new Error(`socket: ${JSON.stringify(message)}`));
      }
    });
    ws.on('error', reject);
    ws.on('open', async () => {
      play = playback(performance.now());
      if (!wordByWord) ws.send(JSON.stringify({ text: INPUT }));
      else {
        for (const word of INPUT.split(/(?<= )/)) {
          ws.send(JSON.stringify({ text: word }));
          await new Promise((r) => setTimeout(r, WORD_MS));
        }
      }
      ws.send('{"text":""}');
    });
  });
}

const run = (mode: Mode) => (mode === 'rest' ? rest() : socket(mode === 'words'));

interface Level {
  mode: Mode;
  clients: number;
  samples: Sample[];
  seconds: number;
}

const levels: Level[] = [];
try {
  for (const mode of ['rest', 'socket', 'words'] as const) await Promise.all(Array.from({ length: 3 }, () => run(mode))); // warm-up
  for (const { clients, perClient } of LEVELS) {
    // Modes alternate within a level, so that each meets the same machine state.
    for (const mode of ['rest', 'socket', 'words'] as const) {
      const samples: Sample[] = [];
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: clients }, async () => {
          for (let i = 0; i < perClient; i++) samples.push(await run(mode));
        }),
      );
      levels.push({ mode, clients, samples, seconds: (performance.now() - t0) / 1000 });
      process.stdout.write(
        `${mode} ×${clients}: first audio p50 ${percentile(
          samples.map((s) => s.firstAudioMs),
          50,
        ).toFixed(1)} ms\n`,
      );
    }
  }
} finally {
  await hello.stop();
}

const restLevel = (clients: number) => levels.find((l) => l.mode === 'rest' && l.clients === clients)!;
const rows = [
  '| mode | clients | runs | first audio p50 ms | first audio p99 ms | done p50 ms | done p99 ms | playback stall p50 / p99 ms | first audio p50 − model-only first phrase ms | first audio p50 / rest | throughput / rest |',
  '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
];
for (const level of levels) {
  const first = level.samples.map((s) => s.firstAudioMs);
  const baseline = restLevel(level.clients);
  const throughput = (l: Level) => l.samples.reduce((n, s) => n + s.bytes, 0) / l.seconds;
  rows.push(
    `| ${level.mode} | ${level.clients} | ${level.samples.length} | ${percentile(first, 50).toFixed(1)} | ${percentile(first, 99).toFixed(1)} | ${percentile(
      level.samples.map((s) => s.doneMs),
      50,
    ).toFixed(1)} | ${percentile(
      level.samples.map((s) => s.doneMs),
      99,
    ).toFixed(1)} | ${percentile(
      level.samples.map((s) => s.stallMs),
      50,
    ).toFixed(0)} / ${percentile(
      level.samples.map((s) => s.stallMs),
      99,
    ).toFixed(0)} | ${(percentile(first, 50) - modelOnlyMs).toFixed(1)} | ${(
      percentile(first, 50) /
      percentile(
        baseline.samples.map((s) => s.firstAudioMs),
        50,
      )
    ).toFixed(2)} | ${(throughput(level) / throughput(baseline)).toFixed(2)} |`,
  );
}
const seconds = pcmBytesPerSecond[FORMAT] ? ` (${(levels[0]!.samples[0]!.bytes / pcmBytesPerSecond[FORMAT]!).toFixed(2)} s of audio)` : '';
recordSection(
  values.dir ? `tts-socket at real size (${path.basename(DIR)})` : 'tts-socket',
  [
    `Text: ${[...INPUT].length} characters${seconds}, jifili-1 on ${voice}, format ${FORMAT}, the server's default TTS replicas (by cores, one thread each); server in its own process, clients (fetch, ws) in this one, on the same machine.`,
    `Model-only first phrase (same run): ${modelOnlyMs.toFixed(1)} ms — raw onnxruntime-node, one intra-op thread, the first phrase's token ids as Kuma plans them, median of 9.`,
    `rest: POST /audio/speech with the whole text. socket: the whole text in one message, then {"text":""}. words: one word per message every ${WORD_MS} ms, then {"text":""}; its first audio waits for the first phrase to be certain (a sentence end and the next word), by design.`,
    'first audio: from the request / the first text message to the first audio bytes; done: to the end of the body / isFinal. Ratios against rest at the same concurrency, in the same run.',
    'playback stall: how far the audio ran behind real-time playback from its first bytes, at worst in a request — the pre-buffer a player needs never to stall (0: every byte came before it was needed; pcm-like formats only).',
  ],
  rows,
  !values['no-write'],
);
