/**
 * Worker thread entry: loads one model's runner (onnxruntime sessions block the thread they run on, so
 * they live here, never on the main thread), warms it, and serves jobs one at a time. Cancellation and
 * flow-control credit arrive as messages; they are seen whenever the runner awaits `checkpoint()`. A job
 * with streamed input gets its `input` messages as `ctx.input`, and each item the runner takes gives the
 * main thread credit for one more (protocol.ts).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { loadRunner } from '../runner-registry.js';
import { EngineCancelledError } from '../errors.js';
import type { Runner, RunnerContext } from '../runner.js';
import { transferables, type MainToWorker, type WorkerInit, type WorkerToMain } from './protocol.js';
import { AsyncQueue } from '../../primitives/async-queue.js';
import { lowerThreadPriority } from '../../threads/thread-priority.js';
import { gateRunWidth, shareWeightsAcrossReplicas, useExecutionProviders } from '../onnx/session.js';

const port = parentPort!;
const init = workerData as WorkerInit;

interface JobState {
  controller: AbortController;
  credit: number;
  wakeCredit: (() => void) | null;
  input: AsyncQueue<unknown> | null;
}

const jobs = new Map<number, JobState>();
const send = (message: WorkerToMain) => port.postMessage(message, transferables(message));
const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

port.on('message', (message: MainToWorker) => {
  if (message.type === 'job') void runJob(message.id, message.method, message.input, message.credit, message.streamedInput === true);
  else if (message.type === 'cancel') jobs.get(message.id)?.controller.abort();
  else if (message.type === 'input') jobs.get(message.id)?.input?.push(message.value);
  else if (message.type === 'input_end') jobs.get(message.id)?.input?.end();
  else if (message.type === 'credit') {
    const job = jobs.get(message.id);
    if (job) {
      job.credit += message.amount;
      job.wakeCredit?.();
    }
  } else if (message.type === 'shutdown') void shutdown();
});

let runner: Runner | null = null;

async function start(): Promise<void> {
  lowerThreadPriority(init.niceness);
  shareWeightsAcrossReplicas(init.sharedWeights ?? null, init.leadReplica ?? true);
  gateRunWidth(init.runGate ?? null);
  useExecutionProviders(init.executionProviders ?? []);
  try {
    const loaded = await loadRunner({ entry: init.entry, dir: init.dir, intraOpThreads: init.intraOpThreads, interOpThreads: init.interOpThreads });
    await loaded.warmup();
    runner = loaded;
    send({ type: 'ready', info: loaded.info() });
  } catch (err) {
    send({ type: 'load_failed', message: (err as Error).message ?? String(err) });
  }
}

async function runJob(id: number, method: string, input: unknown, credit: number, streamedInput: boolean): Promise<void> {
  const controller = new AbortController();
  const { signal } = controller;
  const streamed = streamedInput ? inputQueue(signal, () => send({ type: 'input_credit', id, amount: 1 })) : null;
  const state: JobState = { controller, credit, wakeCredit: null, input: streamed };
  jobs.set(id, state);
  const ctx: RunnerContext = {
    signal,
    async checkpoint() {
      await yieldToEventLoop();
      if (signal.aborted) throw new EngineCancelledError();
    },
    ...(streamed ? { input: streamed } : {}),
  };
  try {
    if (!runner) throw new Error('The model is not loaded');
    const result = runner.call(method, input, ctx);
    if (isAsyncIterable(result)) {
      for await (const chunk of result) {
        // Wait for the main thread to make room before sending more (flow control).
        while (state.credit <= 0 && !signal.aborted) await new Promise<void>((resolve) => (state.wakeCredit = resolve));
        state.wakeCredit = null;
        if (signal.aborted) throw new EngineCancelledError();
        state.credit--;
        send({ type: 'chunk', id, value: chunk });
      }
      send({ type: 'end', id });
    } else {
      send({ type: 'result', id, value: await result });
    }
  } catch (err) {
    if (signal.aborted || err instanceof EngineCancelledError) send({ type: 'cancelled', id });
    else send({ type: 'error', id, message: (err as Error)?.message ?? String(err) });
  } finally {
    jobs.delete(id);
  }
}

// An abort must also wake a job that is waiting for credit.
port.on('message', (message: MainToWorker) => {
  if (message.type === 'cancel') jobs.get(message.id)?.wakeCredit?.();
});

/**
 * A job's streamed input, read once by the runner as `ctx.input`. Taking an item gives the main thread one
 * input credit back, so the queue never holds more than INPUT_CREDIT items. An abort of the job fails it:
 * a runner waiting for input, or reading later, gets EngineCancelledError whatever was still queued.
 */
function inputQueue(signal: AbortSignal, onTaken: () => void): AsyncQueue<unknown> {
  const queue = new AsyncQueue<unknown>({ label: 'A job input stream', onTake: onTaken });
  const cancel = () => queue.fail(new EngineCancelledError());
  if (signal.aborted) cancel();
  else signal.addEventListener('abort', cancel, { once: true });
  return queue;
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof value === 'object' && value !== null && Symbol.asyncIterator in value;
}

async function shutdown(): Promise<void> {
  for (const job of jobs.values()) job.controller.abort();
  await runner?.close().catch(() => {});
  port.close();
}

void start();
