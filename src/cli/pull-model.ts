/**
 * `npm run models:pull -- <repo-id> [options]`: downloads a model directory from the Hugging Face hub (or
 * a mirror) into the models folder, with progress, resume and checksums, then prints the manifest entry
 * that serves it (engine guessed from the files) and can write it into a manifest. The logic is
 * `runPullCommand`, which takes its environment and output functions so tests run it in-process.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ENGINE_TYPES, type EngineType } from '../engines/manifest.js';
import { DEFAULT_ENDPOINT } from '../models-hub/hub-client.js';
import { HubError } from '../models-hub/hub-errors.js';
import { guessEngine, type EngineGuess } from '../models-hub/guess-engine.js';
import { inlineJson, manifestEntry, upsertManifestEntry } from '../models-hub/manifest-writer.js';
import type { ProgressSink } from '../models-hub/progress.js';
import { pullModel, type PullOptions } from '../models-hub/pull.js';
import type { ModelPack } from '../models-hub/pack.js';
import { isEntryPoint } from './entry-point.js';
import { runPackCommand } from './pull-pack-command.js';
import { UsageError } from './usage-error.js';
import { TRANSCRIPTION_MODEL_ID, SPEECH_MODEL_ID, TRANSLATION_MODEL_ID } from '../engines/model-ids.js';

export const HELP_TEXT = `Usage: npm run models:pull -- <repo-id> [options]
       npm run models:pull -- --pack bambara [--variant fp32|quantized|fp16] [--dest DIR] [--manifest FILE]

Downloads a model from the Hugging Face hub into models/<name>, then prints its manifest entry.
With --pack, installs a pack of ready models pinned to commits and checksums (bambara: NLLB-200 600M
for banjugu-1 and MMS-TTS bam for jifili-1, both CC BY-NC 4.0: non-commercial use only) into
models/<pack>, shows each licence, and writes models/<pack>/kuma-models.json, which keeps the other
models of --base-manifest (default: the shipped models/kuma-models.json).

Options:
  --revision REV       branch, tag or commit (default: main)
  --include GLOB       only files matching GLOB (repeatable), e.g. --include 'onnx/*' --include '*.json'
  --exclude GLOB       skip files matching GLOB (repeatable), e.g. --exclude '*_fp16.onnx'
  --dest DIR           destination folder (default: models/<repo name>)
  --endpoint URL       hub or mirror (default: $HF_ENDPOINT, else ${DEFAULT_ENDPOINT})
  --engine ENGINE      engine of the entry, instead of guessing it from the files
                       (${ENGINE_TYPES.filter((e) => e !== 'custom' && e !== 'silero-vad').join(', ')})
  --manifest FILE      add the entry to FILE (created if missing), replacing any entry with the same id
  --id ID              served model id of the entry, e.g. sunjata-1 (required with --manifest)
  --retries N          tries per request on network errors, 429 and 5xx (default: 5)
  --pack NAME          install a pack (bambara) instead of one repo
  --variant V          the pack's file variant where a model has several (bambara NLLB: fp32 (default,
                       provisional until measured), quantized, fp16)
  --base-manifest FILE with --pack: the manifest whose other models the written one keeps
  --quiet              no progress output
  --help               this text

Environment: HF_TOKEN (access token, for gated or private repos), HF_ENDPOINT.
An interrupted download resumes where it stopped when the command is run again.`;

export interface PullIo {
  out: (line: string) => void;
  err: (line: string) => void;
  env?: NodeJS.ProcessEnv;
  /** Relative paths resolve against this folder (npm runs scripts in the package root; INIT_CWD is where the user was). */
  cwd?: string;
  /** Where the progress bar goes (stderr by default); null for none. */
  progress?: ProgressSink | null;
  /** Overrides for tests (backoff delays, stall timeout). */
  client?: Pick<PullOptions, 'retry' | 'stallTimeoutMs'>;
  /** The packs --pack knows (tests install packs pinned to their stand-in hub's files); default: the built-in ones. */
  packs?: Record<string, () => ModelPack>;
}

/** The id a capability is usually served under, for the printed example entry. */
const SUGGESTED_ID: Partial<Record<EngineType, string>> = {
  whisper: TRANSCRIPTION_MODEL_ID,
  'ctc-wav2vec2': TRANSCRIPTION_MODEL_ID,
  'ctc-nemo': '{vendor}-asr-v1',
  'vits-hf': SPEECH_MODEL_ID,
  'vits-sherpa': '{vendor}-tts-v1',
  'vits-piper': '{vendor}-tts-v2',
  nllb: TRANSLATION_MODEL_ID,
};

function parse(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        revision: { type: 'string' },
        include: { type: 'string', multiple: true },
        exclude: { type: 'string', multiple: true },
        dest: { type: 'string' },
        endpoint: { type: 'string' },
        engine: { type: 'string' },
        manifest: { type: 'string' },
        id: { type: 'string' },
        retries: { type: 'string' },
        pack: { type: 'string' },
        variant: { type: 'string' },
        'base-manifest': { type: 'string' },
        quiet: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

export async function runPullCommand(argv: string[], io: PullIo): Promise<number> {
  const env = io.env ?? process.env;
  const base = io.cwd ?? env.INIT_CWD ?? process.cwd();
  try {
    const { values, positionals } = parse(argv);
    if (values.help) {
      io.out(HELP_TEXT);
      return 0;
    }
    const retries = values.retries === undefined ? undefined : Number(values.retries);
    if (retries !== undefined && (!Number.isInteger(retries) || retries < 1 || retries > 100))
      throw new UsageError('--retries must be a whole number from 1 to 100');
    if (values.endpoint !== undefined && !/^https?:\/\/[^/]+/.test(values.endpoint))
      throw new UsageError(`--endpoint must be an http(s) URL, got ${values.endpoint}`);
    if (values.pack !== undefined) {
      const conflicting = [
        ...positionals.map((p) => `the repo id ${p}`),
        ...(['revision', 'include', 'exclude', 'engine', 'id'] as const).filter((o) => values[o] !== undefined).map((o) => `--${o}`),
      ];
      const { variant, dest, manifest, endpoint, quiet } = values;
      const command = { pack: values.pack, variant, dest, manifest, baseManifest: values['base-manifest'], endpoint, retries, quiet, conflicting };
      return await runPackCommand(command, { err: io.err, env, base, progress: io.progress, client: io.client, packs: io.packs });
    }
    if (values.variant !== undefined || values['base-manifest'] !== undefined) throw new UsageError('--variant and --base-manifest go with --pack');
    if (positionals.length !== 1)
      throw new UsageError(positionals.length ? `Expected one repo id, got: ${positionals.join(' ')}` : 'Missing the repo id (e.g. facebook/mms-tts-bam)');
    const repo = positionals[0]!;
    if (values.engine !== undefined && !(ENGINE_TYPES as readonly string[]).includes(values.engine))
      throw new UsageError(`Unknown --engine ${values.engine}; one of ${ENGINE_TYPES.join(', ')}`);
    if (values.manifest !== undefined && !values.id) throw new UsageError('--manifest needs --id, the served model id of the entry (e.g. --id sunjata-1)');
    const dest = path.resolve(base, values.dest ?? path.join('models', repo.split('/').pop()!));
    const endpoint = values.endpoint ?? (env.HF_ENDPOINT || undefined);

    await pullModel({
      repo,
      revision: values.revision,
      include: values.include,
      exclude: values.exclude,
      dest,
      endpoint,
      token: env.HF_TOKEN || env.HUGGING_FACE_HUB_TOKEN || undefined,
      progress: values.quiet ? null : io.progress === undefined ? process.stderr : io.progress,
      ...io.client,
      retry: { ...io.client?.retry, ...(retries !== undefined ? { attempts: retries } : {}) },
    });

    let guess: EngineGuess;
    try {
      guess = values.engine ? { engine: values.engine as EngineType, options: {}, because: '--engine', notes: [] } : guessEngine(dest);
    } catch (err) {
      io.err(`Downloaded, but: ${(err as Error).message}`);
      return values.manifest !== undefined ? 1 : 0;
    }
    const id = values.id ?? SUGGESTED_ID[guess.engine] ?? repo.split('/').pop()!;
    const manifestFile = values.manifest !== undefined ? path.resolve(base, values.manifest) : path.resolve(base, 'models', 'kuma-models.json');
    const entry = { id, engine: guess.engine, absoluteDir: dest, options: guess.options };
    io.err(`Engine ${guess.engine} (${guess.because}).`);
    for (const note of guess.notes) io.err(`Note: ${note}`);
    if (values.manifest !== undefined) {
      const { replaced } = upsertManifestEntry(manifestFile, entry, env.KUMA_VENDOR || 'djelia');
      io.err(`${replaced ? 'Replaced' : 'Added'} ${id} in ${manifestFile}. Serve it with: KUMA_MODELS_MANIFEST=${manifestFile} npm start`);
      io.out(inlineJson(manifestEntry(entry, manifestFile)));
    } else {
      io.err(`Manifest entry for ${path.relative(base, manifestFile) || manifestFile} (or pass --manifest FILE --id ID to write it):`);
      io.out(inlineJson(manifestEntry(entry, manifestFile)));
    }
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`${err.message}\nRun with --help for usage.`);
      return 1;
    }
    if (err instanceof HubError) {
      io.err(`Error: ${err.message}`);
      return 1;
    }
    io.err(`Error: ${(err as Error).message ?? String(err)}`);
    return 1;
  }
}

if (isEntryPoint(import.meta.url)) {
  process.exitCode = await runPullCommand(process.argv.slice(2), { out: (l) => console.log(l), err: (l) => console.error(l) });
}
