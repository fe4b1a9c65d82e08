/**
 * onnxruntime-node sessions for runners (always inside a worker thread: session.run blocks its thread).
 * Thread counts come from config; input element types are read from the session so fp32, fp16 and
 * quantised exports are fed what they declare.
 */
import fs from 'node:fs';
import ort from 'onnxruntime-node';
import { sharedWeightsFile, sharedBytesFile, type SharedWeightsOptions } from './shared-weights.js';
import { runWidths, withRunWidth, type RunCosts, type RunGate } from './run-width.js';

export { ort };

export interface SessionOptions {
  intraOpThreads: number;
  interOpThreads: number;
}

export interface LoadedSession {
  /** The session at the widest width: for metadata. Run through `run`, which picks the width. */
  session: ort.InferenceSession;
  /** Runs the model at the width the process's load allows (run-width.ts). */
  run(feeds: Record<string, ort.Tensor>, fetches?: readonly string[]): Promise<ort.InferenceSession.ReturnType>;
  release(): Promise<void>;
  /** Intra-op thread counts this model holds sessions for (one unless its runs adapt their width). */
  widths: readonly number[];
  file: string;
  inputNames: readonly string[];
  outputNames: readonly string[];
  /** Element type per input name (`float32`, `float16`, `int64`, `bool`, ...). */
  inputTypes: Record<string, string>;
}

/** Set once per worker thread (model-worker.ts) when its model has replicas that share their weights. */
let sharing: SharedWeightsOptions | null = null;
/** Whether this replica is its model's lead: with shared weights, the one replica whose widest session keeps an arena. */
let leadReplica = true;

/**
 * `lead`: the replica a lone job goes to (the pool's first). A memory arena keeps the largest activations a
 * session ever held (hundreds of MB after a long window), so with shared weights only the lead's widest
 * session keeps one: a lone long window (REST) runs there, and a second replica costs its threads and
 * buffers, not a second arena (bench:replica-memory).
 */
export function shareWeightsAcrossReplicas(options: SharedWeightsOptions | null, lead = true): void {
  sharing = options;
  leadReplica = lead;
}

/** Set once per worker thread whose runs adapt their width to the process's load (run-width.ts). */
let gate: RunGate | null = null;

export function gateRunWidth(runGate: RunGate | null): void {
  gate = runGate;
}

/**
 * Set once per worker thread from KUMA_ENGINE_EXECUTION_PROVIDERS (checked at start: execution-providers.ts).
 * Empty, or `cpu` alone, leaves onnxruntime's default: the CPU provider, with no option set.
 */
let providers: readonly string[] = [];

export function useExecutionProviders(names: readonly string[]): void {
  providers = names.length === 1 && names[0] === 'cpu' ? [] : [...names];
}

/** The execution-provider part of a session's options (spread into them). */
export function providerOptions(): Pick<ort.InferenceSession.SessionOptions, 'executionProviders'> {
  return providers.length ? { executionProviders: providers } : {};
}

/**
 * A session for a model file, or for a model built in memory (`bytes`, e.g. a streaming step graph made from
 * the file at load), named after `file` in messages. A file whose replicas share weights is loaded from its
 * external-weights copy (shared-weights.ts), and so is a large model built in memory, once written to the
 * cache. In a worker with a run gate, a model that shares (or is small) gets one session per run width.
 */
export async function createSession(file: string, options: SessionOptions, bytes?: Uint8Array): Promise<LoadedSession> {
  if (!bytes && !fs.existsSync(file)) throw new Error(`Model file not found: ${file}`);
  // A graph built in memory is written to the cache first when replicas share, so its weights are shared too.
  const persist = sharing !== null && bytes !== undefined && bytes.byteLength >= sharing.minBytes;
  const input = persist ? { file: await sharedBytesFile(file, bytes, sharing!), bytes: undefined } : { file, bytes };
  const source = sharing && !input.bytes ? await sharedWeightsFile(input.file, sharing) : { file: input.file, shared: false };
  // Widths only where they are cheap: the sessions share the mapped weights, or the model is small. And only
  // on the CPU: intra-op threads do not size a run on an accelerator, where each session holds its own weights.
  const small = sharing !== null && (input.bytes ? input.bytes.byteLength : fs.statSync(input.file).size) < sharing.minBytes;
  const onCpu = providers.length === 0 || providers[0] === 'cpu';
  const widths = gate && onCpu && (source.shared || small) ? runWidths(options.intraOpThreads) : [options.intraOpThreads];
  const create = (threads: number) => {
    // Shared weights: only the lead replica's widest session keeps a memory arena (below).
    const arena = !source.shared || (leadReplica && threads === widths[widths.length - 1]);
    const sessionOptions = ortOptions(threads, options.interOpThreads, source.shared, arena);
    return input.bytes ? ort.InferenceSession.create(input.bytes, sessionOptions) : ort.InferenceSession.create(source.file, sessionOptions);
  };
  const sessions: ort.InferenceSession[] = [];
  try {
    for (const w of widths) sessions.push(await create(w));
  } catch (err) {
    await Promise.all(sessions.map((s) => s.release()));
    throw err;
  }
  const session = sessions[sessions.length - 1]!;
  const inputTypes: Record<string, string> = {};
  for (const meta of session.inputMetadata) {
    if (meta.isTensor) inputTypes[meta.name] = meta.type;
  }
  const runGate = gate;
  const costs: RunCosts = new Map();
  return {
    session,
    file,
    widths,
    inputNames: session.inputNames,
    outputNames: session.outputNames,
    inputTypes,
    run: (feeds, fetches) =>
      withRunWidth(runGate, widths, inputSize(feeds), costs, (width) => {
        const chosen = sessions[widths.indexOf(width)]!;
        return fetches ? chosen.run(feeds, fetches as string[]) : chosen.run(feeds);
      }),
    release: async () => {
      await Promise.all(sessions.map((s) => s.release()));
    },
  };
}

/** Elements in a run's inputs: what its cost grows with (run-width.ts estimates a wide run's end by it). */
function inputSize(feeds: Record<string, ort.Tensor>): number {
  let n = 0;
  for (const tensor of Object.values(feeds)) n += tensor.size;
  return n;
}

function ortOptions(intraOpThreads: number, interOpThreads: number, shared: boolean, arena: boolean): ort.InferenceSession.SessionOptions {
  return {
    intraOpNumThreads: intraOpThreads,
    interOpNumThreads: interOpThreads,
    graphOptimizationLevel: 'all',
    ...providerOptions(),
    // onnxruntime's pool threads spin-wait for work between operators by default: on a server whose cores
    // are shared with the I/O thread, the VAD and the encoders, that spinning takes the CPU they need
    // (bench:threads measures both settings). Blocking waits cost a few µs per operator instead.
    extra: {
      session: {
        intra_op: { allow_spinning: '0' },
        inter_op: { allow_spinning: '0' },
        // Pre-packed matrices are private copies: replicas sharing mapped weights must read them in place.
        ...(shared ? { disable_prepacking: '1' } : {}),
      },
    },
    // A session's memory arena keeps the largest activations it ever held (a 30 s window of wav2vec2-base:
    // ≈ 450 MB, most of it attention scores; a 15 s window, the default now, about a quarter of the scores).
    // Without it a run allocates and frees its activations: about the same time for realtime chunks, up to
    // ≈ 10 % more for a 10 s window (shared-weights.ts). With shared weights only the widest session of the
    // lead replica keeps one — the one a lone long window (REST) runs on; the narrow ones run realtime chunks.
    ...(arena ? {} : { enableCpuMemArena: false }),
  };
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
