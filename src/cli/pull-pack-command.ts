/**
 * `npm run models:pull -- --pack NAME [--variant V] [--dest DIR] [--manifest FILE]`: installs a model pack
 * (src/models-hub/pack.ts) and writes the manifest that serves it. Called by runPullCommand, which owns the
 * argument parsing; the packs are injectable (`PullIo.packs`) so tests install packs pinned to their own
 * stand-in files without any switch that weakens the checks.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUILT_IN_PACKS } from '../models-hub/bambara-pack.js';
import { PackError, type ModelPack } from '../models-hub/pack.js';
import { pullPack } from '../models-hub/pull-pack.js';
import type { PullOptions } from '../models-hub/pull.js';
import type { ProgressSink } from '../models-hub/progress.js';
import { UsageError } from './usage-error.js';

/** The shipped manifest (demo speech recognition, VAD, ...): what a pack's manifest keeps by default. */
export const SHIPPED_MANIFEST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'models', 'kuma-models.json');

export interface PackCommand {
  pack: string;
  variant?: string;
  dest?: string;
  manifest?: string;
  baseManifest?: string;
  endpoint?: string;
  retries?: number;
  quiet?: boolean;
  /** Options that belong to single-repo pulls, refused with a pack. */
  conflicting: string[];
}

export interface PackIo {
  err: (line: string) => void;
  env: NodeJS.ProcessEnv;
  base: string;
  progress?: ProgressSink | null;
  client?: Pick<PullOptions, 'retry' | 'stallTimeoutMs'>;
  packs?: Record<string, () => ModelPack>;
}

export async function runPackCommand(command: PackCommand, io: PackIo): Promise<number> {
  if (command.conflicting.length) throw new UsageError(`--pack installs fixed files and ids; drop ${command.conflicting.join(', ')}`);
  const packs = io.packs ?? BUILT_IN_PACKS;
  const make = packs[command.pack];
  if (!make) throw new UsageError(`Unknown pack ${JSON.stringify(command.pack)}; known packs: ${Object.keys(packs).join(', ')}`);
  const dest = path.resolve(io.base, command.dest ?? path.join('models', command.pack));
  const manifest = path.resolve(io.base, command.manifest ?? path.join(dest, 'kuma-models.json'));
  const baseManifest = command.baseManifest ? path.resolve(io.base, command.baseManifest) : SHIPPED_MANIFEST;
  try {
    const result = await pullPack(make(), {
      dest,
      variant: command.variant,
      manifest,
      baseManifest,
      vendor: io.env.KUMA_VENDOR || 'djelia',
      endpoint: command.endpoint ?? (io.env.HF_ENDPOINT || undefined),
      token: io.env.HF_TOKEN || io.env.HUGGING_FACE_HUB_TOKEN || undefined,
      progress: command.quiet ? null : io.progress === undefined ? process.stderr : io.progress,
      ...io.client,
      retry: { ...io.client?.retry, ...(command.retries !== undefined ? { attempts: command.retries } : {}) },
      log: io.err,
    });
    const relative = path.relative(io.base, result.manifest) || result.manifest;
    io.err(`Serve it with: KUMA_MODELS_MANIFEST=${relative.startsWith('..') ? result.manifest : relative} npm start`);
    return 0;
  } catch (err) {
    if (err instanceof PackError) throw new UsageError(err.message);
    throw err;
  }
}
