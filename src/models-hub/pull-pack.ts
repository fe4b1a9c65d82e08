/**
 * Installs a model pack: shows each model's licence first (a non-commercial one in plain words), pulls
 * each repository at its pinned commit with exactly the pinned files (resume, retries and checksums are
 * pull.ts's and download.ts's), then writes a complete manifest: the pack's entries, with their licence,
 * over a copy of the base manifest, so the models the pack does not bring (speech recognition, the VAD)
 * stay served. Run again, it finds verified files in place and only rewrites the entries.
 */
import fs from 'node:fs';
import path from 'node:path';
import { formatBytes } from './hub-errors.js';
import { copyManifest, upsertManifestEntry, type NewEntry } from './manifest-writer.js';
import { checkPack, resolvePack, type ModelPack, type ResolvedModel } from './pack.js';
import { pullModel, type PullOptions, type PullResult } from './pull.js';

export interface PackPullOptions extends Omit<PullOptions, 'repo' | 'revision' | 'include' | 'exclude' | 'pinned' | 'dest'> {
  /** Folder the pack's repositories go to (one sub-folder each). */
  dest: string;
  /** File variant (`fp32`, `quantized`, `fp16`) for the models that have several; undefined = their default. */
  variant?: string;
  /** The manifest to write (created from `baseManifest` when it does not exist, else updated in place). */
  manifest: string;
  /** The manifest whose other models the new one keeps (the shipped models/kuma-models.json). */
  baseManifest: string;
  vendor?: string;
  /** Where the licences and the summary go (the progress bar goes to `progress`). */
  log: (line: string) => void;
}

export interface PackPullResult {
  manifest: string;
  entries: NewEntry[];
  pulls: PullResult[];
}

/** The lines that introduce one model: where it comes from, and its licence in plain words. */
export function licenceLines(resolved: ResolvedModel): string[] {
  const { model, variant } = resolved;
  const { license } = model;
  const shown = resolved.files.map((f) => f.shown).filter(Boolean);
  return [
    `${model.id} ← ${model.repo}@${model.revision.slice(0, 12)}${model.modelDir ? ` (folder ${model.modelDir})` : ''}${variant ? `, ${variant} files` : ''}${shown.length ? ` (${shown.join(' + ')})` : ''}`,
    `  Licence: ${license.name} [${license.id}] ${license.url}`,
    `  ${license.commercialUse ? 'Commercial use allowed.' : 'NOT FOR COMMERCIAL USE.'} ${license.notice}`,
    `  Source: ${license.source}`,
  ];
}

/** Files of a model's other variants left in its folder by an earlier pull (a variant switch). */
function otherVariantFiles(r: ResolvedModel, folder: string): string[] {
  const wanted = new Set(r.files.map((f) => f.path));
  const others = Object.values(r.model.variants?.choices ?? {}).flatMap((v) => v.files.map((f) => f.path));
  return [...new Set(others)].filter((p) => !wanted.has(p) && fs.existsSync(path.join(folder, ...p.split('/'))));
}

export async function pullPack(pack: ModelPack, options: PackPullOptions): Promise<PackPullResult> {
  checkPack(pack);
  const resolved = resolvePack(pack, options.variant);
  options.log(`Pack ${pack.name}: ${pack.summary}.`);
  for (const r of resolved) for (const line of licenceLines(r)) options.log(line);

  const pulls: PullResult[] = [];
  const entries: NewEntry[] = [];
  for (const r of resolved) {
    const { model } = r;
    const { dest: _dest, variant: _variant, manifest: _manifest, baseManifest: _base, vendor: _vendor, log: _log, ...client } = options;
    const folder = path.join(options.dest, model.folder);
    const result = await pullModel({ ...client, repo: model.repo, revision: model.revision, pinned: r.files, dest: folder });
    pulls.push(result);
    const fromPage = r.files.filter((f) => f.sha256 !== null).length;
    options.log(
      `${model.id}: ${result.files.length} files (${formatBytes(result.files.reduce((n, f) => n + f.size, 0))}) verified — ` +
        `${fromPage} against the sha256 pinned in the pack, ${result.files.length - fromPage} against the hub's listing of commit ${model.revision.slice(0, 12)}`,
    );
    const unused = otherVariantFiles(r, folder);
    if (unused.length) options.log(`  Not used by this variant (delete to free disk space): ${unused.join(', ')}`);
    entries.push({
      id: model.id,
      engine: model.engine,
      absoluteDir: model.modelDir ? path.join(folder, ...model.modelDir.split('/')) : folder,
      options: r.options,
      license: model.license,
    });
  }

  if (!fs.existsSync(options.manifest)) {
    const comment = `Written by npm run models:pull -- --pack ${pack.name}: ${entries.map((e) => e.id).join(' and ')} from the pack, the other models as in ${path.basename(options.baseManifest)}.`;
    copyManifest(options.baseManifest, options.manifest, comment);
  }
  for (const entry of entries) {
    const { replaced } = upsertManifestEntry(options.manifest, entry, options.vendor);
    options.log(`${replaced ? 'Replaced' : 'Added'} ${entry.id} (${entry.engine}) in ${options.manifest}`);
  }
  return { manifest: options.manifest, entries, pulls };
}
