/**
 * Model manifests: which engine serves each model id, and from which directory. The file is JSON
 * (`models/kuma-models.json` by default, or KUMA_MODELS_MANIFEST); relative directories resolve against
 * the manifest's folder. Validated at start with clear errors.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';

export const ENGINE_TYPES = ['ctc-wav2vec2', 'ctc-nemo', 'whisper', 'vits-hf', 'vits-sherpa', 'vits-piper', 'nllb', 'silero-vad', 'custom'] as const;
export type EngineType = (typeof ENGINE_TYPES)[number];

/**
 * The licence of a model's weights, as the pack that installed them recorded it (models:pull --pack):
 * served as an extension field of GET /models/{id} so a client can tell, e.g., that a voice is
 * non-commercial. Absent for models installed by hand (the operator knows what they copied in).
 */
export const ModelLicenseSchema = z.object({
  /** SPDX-style id in lower case, as the Hugging Face hub writes it (`cc-by-nc-4.0`). */
  id: z.string().min(1),
  name: z.string().min(1),
  url: z.string().min(1),
  /** False for non-commercial licences (CC BY-NC): said plainly wherever the licence is shown. */
  commercialUse: z.boolean(),
  /** Where the weights come from: repo, revision, upstream checkpoint. */
  source: z.string().min(1),
  /** What the licence asks of whoever serves the model, in one or two sentences. */
  notice: z.string().min(1),
});
export type ModelLicense = z.infer<typeof ModelLicenseSchema>;

export const ModelEntrySchema = z.object({
  /** Served id (`sunjata-1`, `djelia-tts-v1`, ...) or an internal one (`vad`). */
  id: z.string().min(1),
  /** More served ids answered by the same loaded model (e.g. a legacy id that shares the weights). */
  aliases: z.array(z.string().min(1)).default([]),
  engine: z.enum(ENGINE_TYPES),
  /** Model directory (relative to the manifest file, or absolute). */
  dir: z.string().min(1),
  /** Worker threads holding their own copy of the model; when absent, chosen by cores (defaultReplicas). */
  replicas: z.number().int().min(1).max(64).optional(),
  /** Jobs allowed to wait when every replica is busy; more answer 503 at once. */
  maxQueue: z.number().int().min(0).max(10_000).default(16),
  /**
   * Jobs one replica runs at once, interleaved between model steps; default 4 for speech recognition
   * (a long upload must not hold the model for everyone else), 1 otherwise (replica-pool.ts).
   */
  jobsPerReplica: z.number().int().min(1).max(64).optional(),
  /** Scheduling niceness of this model's threads (0–19); when absent, defaultNiceness decides. */
  niceness: z.number().int().min(0).max(19).optional(),
  /** onnxruntime intra-op threads of each replica; when absent, KUMA_ENGINE_INTRA_OP_THREADS. */
  intraOpThreads: z.number().int().min(1).max(64).optional(),
  /**
   * Engine-specific settings (file names, decoding options); each runner validates its own. The `custom`
   * engine loads the runner module named by `options.module` (relative to the model directory), which
   * keeps the engine boundary pluggable (e.g. a codec-LM TTS).
   */
  options: z.record(z.string(), z.unknown()).default({}),
  /** Licence of the weights (written by `models:pull --pack`), shown by GET /models/{id}. */
  license: ModelLicenseSchema.optional(),
});
export type ModelEntry = z.infer<typeof ModelEntrySchema>;

const TTS_ENGINES: ReadonlySet<EngineType> = new Set(['vits-hf', 'vits-sherpa', 'vits-piper']);
/** The big models (speech recognition, translation): their runs count toward each other's width (run-width.ts). */
export const SHARED_ENGINES: ReadonlySet<EngineType> = new Set(['ctc-wav2vec2', 'ctc-nemo', 'whisper', 'nllb']);

/** Speech recognition: the engines whose replicas adapt their run width to the load (onnx/run-width.ts). */
export const ADAPTIVE_ENGINES: ReadonlySet<EngineType> = new Set(['ctc-wav2vec2', 'ctc-nemo', 'whisper']);

/**
 * Replicas of a model whose entry does not set `replicas`, on a machine with `cores` cores:
 *   - TTS: one per core. A speech request runs one short job per phrase, so replicas are what lets many
 *     first phrases run at once, and VITS models are small (tens of MB per copy).
 *   - speech recognition, when replicas share their weights (`sharesWeights`, KUMA_ENGINE_SHARE_WEIGHTS): one
 *     per core. A replica then costs its threads and a few MB, and its runs adapt their width: a lone run
 *     takes every core, runs under load one each (run-width.ts) — so a lone caller's final is as quick as
 *     with one wide replica and a busy machine serves as much as one-thread replicas do.
 *   - translation, and speech recognition without shared weights: a quarter of the cores, at least one (these
 *     are the big models: hundreds of MB to GB per copy). An ASR replica runs 4 jobs at once (jobsPerReplica).
 *   - anything else (the VAD, custom runners, whose cost Kuma cannot know): one.
 * Never more than `max` (KUMA_ENGINE_REPLICAS_MAX; tests and small hosts lower it).
 */
export function defaultReplicas(engine: EngineType, cores = os.availableParallelism(), max = 16, sharesWeights = true): number {
  const adaptive = ADAPTIVE_ENGINES.has(engine) && sharesWeights;
  const wanted = TTS_ENGINES.has(engine) || adaptive ? cores : SHARED_ENGINES.has(engine) ? Math.ceil(cores / 4) : 1;
  return Math.max(1, Math.min(max, wanted));
}

/**
 * onnxruntime intra-op threads of each replica of a model whose entry does not set them, when
 * KUMA_ENGINE_INTRA_OP_THREADS does not either:
 *   - speech recognition whose replicas adapt their width (`adaptive`): every core — the widest a run may
 *     take; runs take fewer when others are going on (run-width.ts).
 *   - the other big shared models (translation, speech recognition with fixed widths): the cores split among
 *     the replicas, so one replica on 2 cores gets both. bench:threads (wav2vec2-base, 2 cores): 1 × 2
 *     threads runs a lone 3.5 s chunk in 324 ms and serves 11.0 audio-s/s saturated; 2 × 1, 526 ms and 13.0.
 *   - others: 1 (TTS has one replica per core already; the VAD's jobs are tiny).
 * The pools do not spin (session.ts), so idle threads give the cores back between operators.
 */
export function defaultIntraOpThreads(engine: EngineType, replicas: number, cores = os.availableParallelism(), adaptive = false): number {
  if (adaptive) return cores;
  return SHARED_ENGINES.has(engine) ? Math.max(1, Math.floor(cores / Math.max(1, replicas))) : 1;
}

/** Whether a model's runs adapt their width: speech recognition, several replicas, sharing their weights. */
export function adaptsRunWidth(engine: EngineType, replicas: number, sharesWeights: boolean): boolean {
  return ADAPTIVE_ENGINES.has(engine) && replicas > 1 && sharesWeights;
}

/**
 * Niceness of a model's threads when its entry does not set one: KUMA_ENGINE_NICENESS (`configured`, default
 * 10, so that long model runs — a transcription, a translation — yield to the I/O thread), except for the
 * engines whose jobs are short and on someone's critical path, which run at 0:
 * - the VAD decides when every realtime session's turn ends, in tens of microseconds per window; niced, it
 *   was starved by the I/O thread and the speech model under load and scored seconds late at 500 sessions
 *   (load-tests/realtime);
 * - TTS replicas synthesise one phrase per job (milliseconds), and a caller's first audio waits for its
 *   first phrase; niced, they lost the cores to the encoder threads in a burst of requests (bench:tts,
 *   50 clients: mp3/opus TTFB p99 225/245 ms, the time going to engine-first; at 0: 129/112 ms).
 */
export function defaultNiceness(engine: EngineType, configured = 10): number {
  return engine === 'silero-vad' || TTS_ENGINES.has(engine) ? 0 : configured;
}

export const ManifestSchema = z.object({
  models: z.array(ModelEntrySchema).min(1),
});

export class ManifestError extends Error {}

export interface LoadedManifest {
  file: string;
  entries: Array<ModelEntry & { absoluteDir: string }>;
}

/**
 * Reads and validates a manifest. `{vendor}` in ids and aliases is replaced by the configured vendor name,
 * so one manifest serves whatever the legacy ids are called.
 */
export function loadManifest(file: string, vendor = 'djelia'): LoadedManifest {
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ManifestError(`Cannot read the model manifest ${file}: ${(err as Error).message}`);
  }
  const parsed = ManifestSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ManifestError(`Invalid model manifest ${file}: ${issue.path.join('.')}: ${issue.message}`);
  }
  const seen = new Set<string>();
  const base = path.dirname(path.resolve(file));
  const entries = parsed.data.models.map((raw) => {
    const entry = { ...raw, id: raw.id.replaceAll('{vendor}', vendor), aliases: raw.aliases.map((a) => a.replaceAll('{vendor}', vendor)) };
    for (const id of [entry.id, ...entry.aliases]) {
      if (seen.has(id)) throw new ManifestError(`Model manifest ${file} lists ${id} twice`);
      seen.add(id);
    }
    const absoluteDir = path.resolve(base, entry.dir);
    if (!fs.existsSync(absoluteDir)) throw new ManifestError(`Model ${entry.id}: directory ${absoluteDir} does not exist`);
    return { ...entry, absoluteDir };
  });
  return { file, entries };
}
