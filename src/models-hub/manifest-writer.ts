/**
 * Adds or replaces one entry of a model manifest after a pull, keeping the file's one-entry-per-line
 * layout (so a diff shows exactly which model changed) and writing it atomically. The result is checked
 * against the same schema the server loads, so a pull never leaves a manifest the server would refuse.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ManifestSchema, type EngineType, type ModelLicense } from '../engines/manifest.js';

export interface NewEntry {
  id: string;
  engine: EngineType;
  /** Absolute model directory; written relative to the manifest's folder. */
  absoluteDir: string;
  options: Record<string, unknown>;
  /** Licence of the weights (a pack's models): replaces the entry's, shown by GET /models/{id}. */
  license?: ModelLicense;
}

type RawEntry = Record<string, unknown> & { id: string };

/** `{ "id": "x", "options": { "variant": "_fp16" } }`: JSON on one line, spaced like the shipped manifest. */
export function inlineJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(inlineJson).join(', ')}]`;
  if (value && typeof value === 'object') {
    const fields = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    return fields.length ? `{ ${fields.map(([k, v]) => `${JSON.stringify(k)}: ${inlineJson(v)}`).join(', ')} }` : '{}';
  }
  return JSON.stringify(value);
}

/** Other top-level fields (a "comment") come first, then the models, one per line. */
export function formatManifest(models: RawEntry[], extra: Record<string, unknown> = {}): string {
  const head = Object.entries(extra)
    .map(([k, v]) => `  ${JSON.stringify(k)}: ${inlineJson(v)},\n`)
    .join('');
  return `{\n${head}  "models": [\n${models.map((m) => `    ${inlineJson(m)}`).join(',\n')}\n  ]\n}\n`;
}

/** The entry as it goes in a manifest stored at `manifestFile` (directory relative to it). */
export function manifestEntry(entry: NewEntry, manifestFile: string): RawEntry {
  const relative = path
    .relative(path.dirname(path.resolve(manifestFile)), entry.absoluteDir)
    .split(path.sep)
    .join('/');
  return {
    id: entry.id,
    engine: entry.engine,
    dir: relative || '.',
    ...(Object.keys(entry.options).length ? { options: entry.options } : {}),
    ...(entry.license ? { license: entry.license } : {}),
  };
}

/**
 * Writes `entry` into `manifestFile` (created when missing). An entry with the same id (`{vendor}` ids
 * match their expansion) is replaced: engine, dir and options are new; aliases, replicas, maxQueue and
 * jobsPerReplica are kept. Returns whether an entry was replaced.
 */
export function upsertManifestEntry(manifestFile: string, entry: NewEntry, vendor = 'djelia'): { replaced: boolean; text: string } {
  let models: RawEntry[] = [];
  let extra: Record<string, unknown> = {};
  if (fs.existsSync(manifestFile)) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(fs.readFileSync(manifestFile, 'utf8'));
    } catch (err) {
      throw new Error(`Cannot read the manifest ${manifestFile}: ${(err as Error).message}`);
    }
    const list = (parsed as { models?: unknown })?.models;
    if (!Array.isArray(list)) throw new Error(`${manifestFile} is not a model manifest (no "models" list)`);
    models = list as RawEntry[];
    extra = Object.fromEntries(Object.entries(parsed as Record<string, unknown>).filter(([k]) => k !== 'models'));
  }
  const expand = (id: unknown) => String(id).replaceAll('{vendor}', vendor);
  const fresh = manifestEntry(entry, manifestFile);
  const index = models.findIndex((m) => expand(m.id) === entry.id);
  const clash = models.find((m, i) => i !== index && Array.isArray(m.aliases) && m.aliases.map(expand).includes(entry.id));
  if (clash) throw new Error(`${entry.id} is an alias of ${clash.id} in ${manifestFile}: remove the alias there first, or pick another --id`);
  if (index >= 0) {
    const { options: _old, engine: _engine, dir: _dir, license: _license, ...kept } = models[index]!;
    models[index] = {
      ...kept,
      engine: fresh.engine,
      dir: fresh.dir,
      ...(fresh.options ? { options: fresh.options } : {}),
      ...(fresh.license ? { license: fresh.license } : {}),
    };
  } else {
    models.push(fresh);
  }
  const checked = ManifestSchema.safeParse({ models });
  if (!checked.success) {
    const issue = checked.error.issues[0]!;
    throw new Error(`The manifest would be invalid (${issue.path.join('.')}: ${issue.message}); ${manifestFile} was not changed`);
  }
  const text = formatManifest(models, extra);
  const tmp = `${manifestFile}.tmp-${process.pid}`;
  fs.mkdirSync(path.dirname(path.resolve(manifestFile)), { recursive: true });
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, manifestFile);
  return { replaced: index >= 0, text };
}

/**
 * Copies the manifest `from` to `to` with every relative model directory rewritten to point at the same
 * folder from `to`'s place (absolute ones kept), and `comment` first: the start of a pack's manifest, which
 * keeps the models the pack does not replace (speech recognition, the VAD).
 */
export function copyManifest(from: string, to: string, comment: string): void {
  let parsed: { models?: unknown };
  try {
    parsed = JSON.parse(fs.readFileSync(from, 'utf8')) as { models?: unknown };
  } catch (err) {
    throw new Error(`Cannot read the base manifest ${from}: ${(err as Error).message}`);
  }
  if (!Array.isArray(parsed.models)) throw new Error(`${from} is not a model manifest (no "models" list)`);
  const fromDir = path.dirname(path.resolve(from));
  const toDir = path.dirname(path.resolve(to));
  const models = (parsed.models as RawEntry[]).map((m) => {
    if (typeof m.dir !== 'string' || path.isAbsolute(m.dir)) return m;
    return { ...m, dir: path.relative(toDir, path.resolve(fromDir, m.dir)).split(path.sep).join('/') || '.' };
  });
  fs.mkdirSync(toDir, { recursive: true });
  const tmp = `${to}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, formatManifest(models, { comment }));
  fs.renameSync(tmp, to);
}
