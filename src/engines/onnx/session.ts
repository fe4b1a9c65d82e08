/**
 * onnxruntime-node sessions for runners (always inside a worker thread: session.run blocks its thread).
 * Thread counts come from config; input element types are read from the session so fp32, fp16 and
 * quantised exports are fed what they declare.
 */
import fs from 'node:fs';
import ort from 'onnxruntime-node';
import { sharedWeightsFile, type SharedWeightsOptions } from './shared-weights.js';

export { ort };

export interface SessionOptions {
  intraOpThreads: number;
  interOpThreads: number;
}

export interface LoadedSession {
  session: ort.InferenceSession;
  file: string;
  inputNames: readonly string[];
  outputNames: readonly string[];
  /** Element type per input name (`float32`, `float16`, `int64`, `bool`, ...). */
  inputTypes: Record<string, string>;
}

/** Set once per worker thread (model-worker.ts) when its model has replicas that share their weights. */
let sharing: SharedWeightsOptions | null = null;

export function shareWeightsAcrossReplicas(options: SharedWeightsOptions | null): void {
  sharing = options;
}

/**
 * A session for a model file, or for a model built in memory (`bytes`, e.g. a streaming step graph made from
 * the file at load), named after `file` in messages. A file whose replicas share weights is loaded from its
 * external-weights copy (shared-weights.ts); a model built in memory holds its own.
 */
export async function createSession(file: string, options: SessionOptions, bytes?: Uint8Array): Promise<LoadedSession> {
  if (!bytes && !fs.existsSync(file)) throw new Error(`Model file not found: ${file}`);
  const source = sharing && !bytes ? await sharedWeightsFile(file, sharing) : { file, shared: false };
  const sessionOptions: ort.InferenceSession.SessionOptions = {
    intraOpNumThreads: options.intraOpThreads,
    interOpNumThreads: options.interOpThreads,
    graphOptimizationLevel: 'all',
    // onnxruntime's pool threads spin-wait for work between operators by default: on a server whose cores
    // are shared with the I/O thread, the VAD and the encoders, that spinning takes the CPU they need
    // (bench:threads measures both settings). Blocking waits cost a few µs per operator instead.
    extra: {
      session: {
        intra_op: { allow_spinning: '0' },
        inter_op: { allow_spinning: '0' },
        // Pre-packed matrices are private copies: replicas sharing mapped weights must read them in place.
        ...(source.shared ? { disable_prepacking: '1' } : {}),
      },
    },
    // A replica's memory arena keeps the largest activations it ever held (a 30 s window of wav2vec2-base:
    // ≈ 450 MB, most of it attention scores), so with shared weights the arena was most of what a second
    // replica cost (bench:replica-memory). Without it a run allocates and frees its activations: about the
    // same time for realtime chunks, up to ≈ 10 % more for a 10 s window (shared-weights.ts).
    ...(source.shared ? { enableCpuMemArena: false } : {}),
  };
  const session = bytes ? await ort.InferenceSession.create(bytes, sessionOptions) : await ort.InferenceSession.create(source.file, sessionOptions);
  const inputTypes: Record<string, string> = {};
  for (const meta of session.inputMetadata) {
    if (meta.isTensor) inputTypes[meta.name] = meta.type;
  }
  return { session, file, inputNames: session.inputNames, outputNames: session.outputNames, inputTypes };
}

/** Checks that a model declares the inputs and outputs a layout needs; names what is missing. */
export function requireSignature(loaded: LoadedSession, inputs: string[], outputs: string[]): void {
  const missingIn = inputs.filter((name) => !loaded.inputNames.includes(name));
  const missingOut = outputs.filter((name) => !loaded.outputNames.includes(name));
  if (missingIn.length || missingOut.length) {
    throw new Error(
      `${loaded.file} does not have the expected signature: ` +
        [missingIn.length ? `missing inputs ${missingIn.join(', ')}` : '', missingOut.length ? `missing outputs ${missingOut.join(', ')}` : '']
          .filter(Boolean)
          .join('; ') +
        ` (it has inputs ${loaded.inputNames.join(', ')}; outputs ${loaded.outputNames.join(', ')})`,
    );
  }
}
