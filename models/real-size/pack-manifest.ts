/**
 * The real-size pack's manifests and parameter table. The API serves fixed model ids (sunjata-1, jifili-1,
 * banjugu-1), so each speech recogniser of the pack gets a manifest of its own that serves it as sunjata-1;
 * `kuma-models.json` is the default pairing (wav2vec2-base, NLLB-600M, MMS-TTS VITS). The verification
 * manifest loads every model once under its folder name.
 */
import type { ModelEntry } from '../../src/engines/manifest.js';

/** What pack.py stamps into each finished model folder (`.complete.json`), plus the folder name. */
export interface PackedModel {
  dir: string;
  name: string;
  engine: ModelEntry['engine'];
  params: number;
  published_params: number;
  seed: number;
  seconds: number;
  /** Runner options for the manifest entry (e.g. a model file name). */
  options?: Record<string, unknown>;
}

/** Served id of each capability, by engine. */
const SERVED_AS: Partial<Record<ModelEntry['engine'], string>> = {
  'ctc-wav2vec2': 'sunjata-1',
  'ctc-nemo': 'sunjata-1',
  nllb: 'banjugu-1',
  'vits-hf': 'jifili-1',
};

const VAD = { id: 'vad', engine: 'silero-vad', dir: '.' } as const;
const DEFAULT_ASR = 'wav2vec2-base';

type Entry = Pick<ModelEntry, 'id' | 'engine' | 'dir'> & { options?: Record<string, unknown>; replicas?: number };

/**
 * Realtime chunking per packed model where the defaults do not suit its cost (streaming-options.ts). XLS-R-300M
 * costs ≈ 3× wav2vec2-base: with the default 0.5 s steps, 1 s of left context and 0.5 s of lookahead, an idle
 * model's step took longer than the audio it added, so a lone turn fell behind and its final came ≈ 0.9 s after
 * speech_stopped (p99 1.2 s). Steps of 1 s with 0.5 s / 0.25 s of context keep up (p99 ≈ 0.4 s), at the price
 * of frames that see less context (bench:chunking). On a busy model, chunks of 2 s (not the default 4 s, longer
 * than a 3 s turn): a turn is mostly encoded while it is spoken, so its final is ≈ 0.4 s of work rather than
 * the whole turn's ≈ 0.75 s, and two finals that meet wait less for each other (6 sessions: p99 1.05–1.10 s
 * with 4 s chunks, 0.92 s with 2 s). load-tests/RESULTS.md "realtime at real size (xls-r-300m)".
 */
export const PACK_STREAMING: Record<string, Record<string, number>> = {
  'xls-r-300m': { leftSeconds: 0.5, rightSeconds: 0.25, minChunkSeconds: 1, chunkSeconds: 2 },
};

/**
 * Replicas per packed model where adaptive widths (src/engines/onnx/run-width.ts) do not pay. They pay when
 * one-thread runs side by side do more work than one run on every core: true of wav2vec2-base on this 2-core
 * machine (2 × 1: 13.1 audio-s/s, 1 × 2: 11.0), not of XLS-R-300M (1 × 2: 4.73 audio-s/s, more than 2 × 1;
 * its larger matrices split well across threads). Served adaptively, XLS-R's turns ran narrow beside each
 * other at ≈ 1.9 s per 4 s turn and 4 sessions missed p99 ≤ 1 s; one replica with every core runs them one
 * after the other, each in ≈ 0.85 s. load-tests/RESULTS.md "realtime at real size (xls-r-300m)".
 */
export const PACK_REPLICAS: Record<string, number> = {
  'xls-r-300m': 1,
};

function entry(model: PackedModel, id: string): Entry {
  const streaming = PACK_STREAMING[model.dir];
  const options = streaming ? { ...model.options, streaming } : model.options;
  const replicas = PACK_REPLICAS[model.dir];
  return { id, engine: model.engine, dir: model.dir, ...(options ? { options } : {}), ...(replicas ? { replicas } : {}) };
}

/** The default manifest: sunjata-1 (wav2vec2-base when packed), banjugu-1, jifili-1 and the VAD. */
export function packManifest(models: PackedModel[]): { models: Entry[] } {
  const asr = models.filter((m) => SERVED_AS[m.engine] === 'sunjata-1');
  const chosen = asr.find((m) => m.dir === DEFAULT_ASR) ?? asr[0];
  const others = models.filter((m) => SERVED_AS[m.engine] && SERVED_AS[m.engine] !== 'sunjata-1');
  return { models: [...(chosen ? [entry(chosen, 'sunjata-1')] : []), ...others.map((m) => entry(m, SERVED_AS[m.engine]!)), VAD] };
}

/** A manifest serving one speech recogniser of the pack as sunjata-1 (for the benchmarks), with the VAD. */
export function asrManifest(model: PackedModel): { models: Entry[] } {
  return { models: [entry(model, 'sunjata-1'), VAD] };
}

/** Every model under its folder name: what `npm run models:real-size` loads to check the pack. */
export function verificationManifest(models: PackedModel[]): { models: Entry[] } {
  return { models: [...models.map((m) => entry(m, m.dir)), VAD] };
}

export function paramsTable(models: PackedModel[]): string {
  const rows = models.map((m) => {
    const ratio = m.params / m.published_params;
    return `| ${m.dir} | \`${m.engine}\` | ${(m.params / 1e6).toFixed(2)} M | ${(m.published_params / 1e6).toFixed(1)} M | ${((ratio - 1) * 100).toFixed(1)} % |`;
  });
  return ['| Model | Layout | Parameters | Published | Difference |', '|---|---|---:|---:|---:|', ...rows, ''].join('\n');
}
