/**
 * Messages between the main thread and a model worker. Jobs are identified by id; streaming jobs send
 * `chunk` messages under credit-based flow control (the worker never has more than `credit` chunks in
 * flight that the main thread has not consumed), so a slow client throttles the model instead of
 * piling chunks up in memory.
 *
 * Jobs with streamed input (`streamedInput`) receive their input as `input` messages ended by
 * `input_end`, under the same flow control the other way: the main thread sends at most INPUT_CREDIT
 * inputs ahead, and the worker gives one `input_credit` back per input the runner takes, so a long
 * upload flows through the model in bounded memory at the model's pace.
 */
import type { ModelEntry } from '../manifest.js';

export interface WorkerInit {
  entry: ModelEntry;
  /** Absolute model directory. */
  dir: string;
  intraOpThreads: number;
  interOpThreads: number;
  /** Scheduling niceness of the worker thread (0 = normal, 19 = lowest). */
  niceness: number;
  /** onnxruntime execution providers (KUMA_ENGINE_EXECUTION_PROVIDERS); absent = the CPU. */
  executionProviders?: string[];
  /** Set when the model's replicas share one mapped copy of the weights (onnx/shared-weights.ts). */
  sharedWeights?: { cacheDir: string; minBytes: number };
  /** The pool's first replica, where a lone job goes: with shared weights, the only one keeping a memory arena (onnx/session.ts). */
  leadReplica?: boolean;
  /** The process's count of big-model runs and this worker's slot in it, when its runs are counted (onnx/run-width.ts). */
  runGate?: { slots: Int32Array; slot: number; wide: Int32Array; load: Int32Array };
}

/** Inputs the main thread may send to a streamed-input job before the runner has taken them. */
export const INPUT_CREDIT = 2;

export type MainToWorker =
  | { type: 'job'; id: number; method: string; input: unknown; credit: number; streamedInput?: boolean }
  | { type: 'input'; id: number; value: unknown }
  | { type: 'input_end'; id: number }
  | { type: 'cancel'; id: number }
  | { type: 'credit'; id: number; amount: number }
  | { type: 'shutdown' };

export type WorkerToMain =
  | { type: 'ready'; info: Record<string, unknown> }
  | { type: 'load_failed'; message: string }
  | { type: 'result'; id: number; value: unknown }
  | { type: 'chunk'; id: number; value: unknown }
  | { type: 'input_credit'; id: number; amount: number }
  | { type: 'end'; id: number }
  | { type: 'cancelled'; id: number }
  | { type: 'error'; id: number; message: string };

/** Collects the ArrayBuffers inside a value so postMessage can transfer rather than copy them. */
export function transferables(value: unknown, out: ArrayBuffer[] = [], depth = 0): ArrayBuffer[] {
  if (depth > 4 || value === null || typeof value !== 'object') return out;
  if (ArrayBuffer.isView(value)) {
    const buffer = value.buffer;
    // Only whole, non-shared buffers can be transferred without surprising their other views.
    if (buffer instanceof ArrayBuffer && value.byteOffset === 0 && value.byteLength === buffer.byteLength && !out.includes(buffer)) out.push(buffer);
    return out;
  }
  for (const v of Array.isArray(value) ? value : Object.values(value)) transferables(v, out, depth + 1);
  return out;
}
