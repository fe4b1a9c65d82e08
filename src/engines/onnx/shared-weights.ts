/**
 * One copy of a model's weights for all its replicas. Each replica is a worker thread with its own
 * onnxruntime session, and a session normally reads the whole .onnx file into its own memory and pre-packs
 * its matrices into more: a second replica of wav2vec2-base cost +680 MB (the weights plus packed copies).
 * onnxruntime maps weights kept in an external data file (mmap), so sessions of the same file in one process
 * share those pages — as long as they do not pre-pack them into private copies. Measured on the real-size
 * wav2vec2-base: two sessions of the shared file in one process hold the weights once. The rest of a
 * replica's cost is its memory arena, which keeps the largest activations it ever held (≈ 450 MB after a 30 s
 * window): a second replica sharing the weights but keeping an arena still cost as much as the first (+884 MB
 * PSS, bench:replica-memory). So only the lead replica's widest session keeps an arena (session.ts): a second
 * replica then adds its threads and a few MB. The price, measured on one core: a 3.5 s chunk the same (≈ 560 ms), a 10 s
 * window ≈ 5–10 % slower (allocating its activations each run), and ≈ 6 % from the matrices not pre-packed.
 *
 * So, for models of at least `minBytes` served by more than one replica, the first replica to load writes the
 * model once with its weights external (onnxruntime's own optimized-model writer, basic optimizations only,
 * so the file holds no machine-specific kernels) into the cache folder, keyed by the source file's path,
 * size and time and onnxruntime's version; every replica then loads that file with pre-packing off.
 * Concurrent replicas and processes wait on a lock folder while one writes.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import ort from 'onnxruntime-node';

export interface SharedWeightsOptions {
  cacheDir: string;
  /** Smaller model files load as they are (nothing to share worth a cache file). */
  minBytes: number;
}

const LOCK_STALE_MS = 10 * 60_000;

/** The file a replica should load (the external-data copy, or `file` itself when not worth it), and whether it shares. */
export async function sharedWeightsFile(file: string, options: SharedWeightsOptions): Promise<{ file: string; shared: boolean }> {
  const stat = fs.statSync(file);
  if (stat.size < options.minBytes) return { file, shared: false };
  const key = createHash('sha256')
    .update(`${path.resolve(file)}|${stat.size}|${stat.mtimeMs}|${ort.env.versions.common}`)
    .digest('hex')
    .slice(0, 16);
  const target = path.join(options.cacheDir, `${path.basename(file, '.onnx')}-${key}.onnx`);
  if (fs.existsSync(`${target}.complete`)) return { file: target, shared: true };
  fs.mkdirSync(options.cacheDir, { recursive: true });
  const lock = `${target}.lock`;
  for (;;) {
    try {
      fs.mkdirSync(lock);
      break;
    } catch {
      if (fs.existsSync(`${target}.complete`)) return { file: target, shared: true };
      // A lock left by a process that died while writing is taken over once it is old.
      const held = fs.statSync(lock, { throwIfNoEntry: false });
      if (held && Date.now() - held.mtimeMs > LOCK_STALE_MS) fs.rmSync(lock, { recursive: true, force: true });
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  try {
    if (!fs.existsSync(`${target}.complete`)) await writeExternal(file, target);
    return { file: target, shared: true };
  } finally {
    fs.rmSync(lock, { recursive: true, force: true });
  }
}

/**
 * A model built in memory (a streaming step graph made from a file at load) as a file in the cache, so that
 * replicas can share its weights like a file's: keyed by its content, written once (rename: no replica
 * reads a half-written file). session.ts calls it only for models of at least `minBytes`.
 */
export async function sharedBytesFile(file: string, bytes: Uint8Array, options: SharedWeightsOptions): Promise<string> {
  const key = createHash('sha256').update(bytes).digest('hex').slice(0, 16);
  const target = path.join(options.cacheDir, `${path.basename(file, '.onnx')}-built-${key}.onnx`);
  if (!fs.existsSync(target)) {
    fs.mkdirSync(options.cacheDir, { recursive: true });
    const partial = `${target}.${process.pid}.${Math.random().toString(36).slice(2)}.partial`;
    fs.writeFileSync(partial, bytes);
    fs.renameSync(partial, target);
  }
  return target;
}

async function writeExternal(file: string, target: string): Promise<void> {
  const data = `${path.basename(target)}.data`;
  // On the CPU whatever KUMA_ENGINE_EXECUTION_PROVIDERS says: this session only writes the file, and a graph
  // saved after basic (provider-independent) optimisation loads under any provider.
  const session = await ort.InferenceSession.create(file, {
    intraOpNumThreads: 1,
    graphOptimizationLevel: 'basic',
    optimizedModelFilePath: target,
    extra: { session: { optimized_model_external_initializers_file_name: data, optimized_model_external_initializers_min_size_in_bytes: '1024' } },
  });
  await session.release();
  fs.writeFileSync(`${target}.complete`, '');
}
