/**
 * Worker-thread side of DecoderPool: decodes one upload at a time with decodeAudio and posts the result
 * back, transferring the sample buffer. Errors cross the thread boundary as plain data (kind, name,
 * message) because class identity does not survive structured cloning; the pool rebuilds them.
 */
import { parentPort } from 'node:worker_threads';
import { AudioDecodeError, type DecodedAudio } from '../types.js';
import { decodeAudio, type DecodeOptions } from './decode-audio.js';

export interface DecodeJob {
  id: number;
  bytes: Uint8Array;
  options: DecodeOptions;
}

export type WorkerReply =
  | { type: 'ready' }
  | { type: 'done'; id: number; audio: DecodedAudio }
  | { type: 'failed'; id: number; error: { kind?: AudioDecodeError['kind']; name: string; message: string } };

const port = parentPort;
if (!port) throw new Error('decoder-worker.ts must run in a worker thread (see DecoderPool)');

// The WASM decoders print to the console on bad input (libFLAC prints a line per lost sync, with a stack
// trace). Hostile uploads would flood the server's logs through this thread; what went wrong reaches the
// caller in the AudioDecodeError's message instead.
for (const method of ['log', 'info', 'warn', 'error', 'debug', 'trace'] as const) console[method] = () => {};

port.on('message', (job: DecodeJob) => {
  void (async () => {
    try {
      const audio = await decodeAudio(job.bytes, job.options);
      // Transfer, not copy: the samples' own buffer when they span all of it, else a copy that does.
      const own = audio.samples.byteOffset === 0 && audio.samples.byteLength === audio.samples.buffer.byteLength;
      const samples = own ? audio.samples : audio.samples.slice();
      const reply: WorkerReply = { type: 'done', id: job.id, audio: { ...audio, samples } };
      port.postMessage(reply, [samples.buffer as ArrayBuffer]);
    } catch (error) {
      const e = error instanceof Error ? error : new Error(String(error));
      const reply: WorkerReply = {
        type: 'failed',
        id: job.id,
        error: { kind: error instanceof AudioDecodeError ? error.kind : undefined, name: e.name, message: e.message },
      };
      port.postMessage(reply);
    }
  })();
});

port.postMessage({ type: 'ready' } satisfies WorkerReply);
