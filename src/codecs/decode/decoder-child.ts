/**
 * Child-process side of DecoderPool: runs several upload decodes (decode-stream.ts) at once, interleaved
 * one generator step at a time, and sends each one's header, windows and summary back over the IPC
 * channel (structured clones: see spawn-child.ts). A job sends windows only while it has credit (the pool
 * returns one per window its consumer takes), so a consumer that is slow because the model is busy pauses
 * its decode instead of piling windows up; a paused job costs no CPU and lets the others run.
 *
 * Why a process and not a thread: a hostile upload can make a decoder allocate without bound (V8's
 * out-of-memory is fatal to the whole process even inside a worker thread on Node 20; WASM heaps grow
 * outside V8's limits). Here that kills this process only; the pool fails the job whose step was running,
 * fails the others on this process as retryable, and starts a fresh one.
 *
 * Time limit: each job's own work (the time its steps take, not the time it waits for credit or for other
 * jobs' steps) is summed, and a job whose sum passes its budget fails with AudioDecodeError('timeout').
 * A step that never returns (a decoder spinning) cannot be stopped from here: the pool notices the
 * silence (each step starts with a `step` message) and kills this process.
 *
 * Errors cross the process boundary as plain data (kind, name, message) because class identity does not
 * survive structured cloning; the pool rebuilds them.
 */
import { AudioDecodeError } from '../types.js';
import { readFile } from 'node:fs/promises';
import { decodeAudioStream, type DecodeOptions, type DecodeSummary, type StreamHeader } from './decode-stream.js';
import { ignoreGroupStopSignals } from '../../threads/group-signals.js';

export type PoolToChild =
  /** The upload comes as `bytes`, or as the `path` of the file it was spooled to (read here, not sent). */
  | { type: 'start'; id: number; bytes?: Uint8Array; path?: string; options: DecodeOptions; credit: number; budgetMs: number }
  | { type: 'credit'; id: number; amount: number }
  | { type: 'cancel'; id: number };

export interface ErrorData {
  kind?: AudioDecodeError['kind'];
  name: string;
  message: string;
}

export type ChildReply =
  | { type: 'ready' }
  | { type: 'step'; id: number }
  | { type: 'header'; id: number; header: StreamHeader }
  | { type: 'window'; id: number; samples: Float32Array }
  | { type: 'done'; id: number; summary: DecodeSummary }
  | { type: 'failed'; id: number; error: ErrorData }
  | { type: 'cancelled'; id: number };

const send = process.send?.bind(process);
if (!send) throw new Error('decoder-child.ts must run in a child process with an IPC channel (see DecoderPool)');
// The pool is gone (the server exited or killed the channel): nothing can use what this process decodes.
process.on('disconnect', () => process.exit(0));
// Stopped by the pool, not by a signal to the server's process group (see group-signals.ts).
ignoreGroupStopSignals();

// The WASM decoders print to the console on bad input (libFLAC prints a line per lost sync, with a stack
// trace). Hostile uploads would flood the server's logs through this process; what went wrong reaches the
// caller in the AudioDecodeError's message instead.
for (const method of ['log', 'info', 'warn', 'error', 'debug', 'trace'] as const) console[method] = () => {};

interface JobState {
  credit: number;
  cancelled: boolean;
  wake: (() => void) | null;
}

const jobs = new Map<number, JobState>();
const post = (reply: ChildReply) => void send(reply);
/** A macrotask turn: other jobs' steps and incoming credit/cancel messages get their chance. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

function errorData(error: unknown): ErrorData {
  const e = error instanceof Error ? error : new Error(String(error));
  return { kind: error instanceof AudioDecodeError ? error.kind : undefined, name: e.name, message: e.message };
}

const asBytes = (buffer: Buffer) => new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);

async function run(job: Extract<PoolToChild, { type: 'start' }>): Promise<void> {
  const state: JobState = { credit: job.credit, cancelled: false, wake: null };
  jobs.set(job.id, state);
  let workMs = 0;
  try {
    const bytes = job.path === undefined ? job.bytes! : asBytes(await readFile(job.path));
    const stream = decodeAudioStream(bytes, job.options);
    for (;;) {
      while (state.credit <= 0 && !state.cancelled) await new Promise<void>((resolve) => (state.wake = resolve));
      await turn();
      if (state.cancelled) {
        await stream.return(undefined as never); // frees the decoder and the resampler
        post({ type: 'cancelled', id: job.id });
        return;
      }
      post({ type: 'step', id: job.id });
      const t0 = performance.now();
      const step = await stream.next();
      workMs += performance.now() - t0;
      if (step.done) {
        post({ type: 'done', id: job.id, summary: step.value });
        return;
      }
      if (workMs > job.budgetMs) {
        await stream.return(undefined as never);
        throw new AudioDecodeError('timeout', `Decoding the audio took longer than ${job.budgetMs / 1000} s and was stopped.`);
      }
      const event = step.value;
      if (event.type === 'header') {
        post({ type: 'header', id: job.id, header: event.header });
      } else {
        state.credit--;
        // A clone of a view carries its whole buffer: send one that spans only the window.
        const own = event.samples.byteOffset === 0 && event.samples.byteLength === event.samples.buffer.byteLength;
        post({ type: 'window', id: job.id, samples: own ? event.samples : event.samples.slice() });
      }
    }
  } catch (error) {
    post({ type: 'failed', id: job.id, error: errorData(error) });
  } finally {
    jobs.delete(job.id);
  }
}

process.on('message', (message: PoolToChild) => {
  if (message.type === 'start') {
    void run(message);
    return;
  }
  const state = jobs.get(message.id);
  if (!state) return; // already finished: its last message is on its way
  if (message.type === 'credit') state.credit += message.amount;
  else state.cancelled = true;
  const wake = state.wake;
  state.wake = null;
  wake?.();
});

post({ type: 'ready' });
