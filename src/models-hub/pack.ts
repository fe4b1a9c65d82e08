/**
 * Model packs: named sets of ready ONNX exports on the Hugging Face hub that `npm run models:pull -- --pack
 * NAME` installs in one command. Each repository is pinned to one commit and, where the hub's file pages
 * publish them, each file to its sha256 and size. A pack is plain data (bambara-pack.ts builds one from its
 * pins); tests build theirs the same way from their stand-in hub's files, so no flag ever turns the checks off.
 */
import type { EngineType, ModelLicense } from '../engines/manifest.js';

export interface PinnedFile {
  /** Path in the repository at the pinned commit. */
  path: string;
  /**
   * sha256 of the content, as the file's hub page gives it. null where no page gave it: the download is then
   * checked against what the hub lists for the pinned commit (LFS sha256, or the git blob id of a small file).
   */
  sha256: string | null;
  /** Exact size in bytes where a page gave it (small files); null otherwise (the listing's size is used). */
  size: number | null;
  /** The size as the hub page shows it (`1.66 GB`), to tell the operator what is coming. */
  shown?: string;
}

export interface PackVariant {
  /** Runner options the variant needs (the nllb runner's `variant` file-name suffix). */
  options: Record<string, unknown>;
  files: PinnedFile[];
}

export interface PackModel {
  /** Served model id of the manifest entry (`banjugu-1`). */
  id: string;
  engine: EngineType;
  repo: string;
  /** Full commit sha: every file is listed and downloaded at this commit. */
  revision: string;
  /** Folder under the pack's destination the repository's files go to (with their repository paths). */
  folder: string;
  /** The model directory inside that folder (`bam` for a repository with one folder per language), or ''. */
  modelDir: string;
  /** Files every variant needs. */
  files: PinnedFile[];
  options: Record<string, unknown>;
  /** File variants (fp32, quantized, ...), one chosen with --variant; absent = one set of files. */
  variants?: { default: string; choices: Record<string, PackVariant> };
  license: ModelLicense;
  /** The hub pages the pins were read from. */
  pinnedFrom: string[];
}

export interface ModelPack {
  name: string;
  summary: string;
  models: PackModel[];
}

/** A pack that cannot be installed as asked (unknown variant, malformed pins): a usage problem, exit 1. */
export class PackError extends Error {}

export interface ResolvedModel {
  model: PackModel;
  /** Variant name, or null for a model without variants. */
  variant: string | null;
  files: PinnedFile[];
  options: Record<string, unknown>;
}

/** The files and options of every model for `--variant` (undefined: each model's default). */
export function resolvePack(pack: ModelPack, requested?: string): ResolvedModel[] {
  const withVariants = pack.models.filter((m) => m.variants);
  if (requested !== undefined && !withVariants.length) throw new PackError(`The ${pack.name} pack has no file variants; drop --variant`);
  return pack.models.map((model) => {
    if (!model.variants) return { model, variant: null, files: model.files, options: model.options };
    const name = requested ?? model.variants.default;
    const chosen = model.variants.choices[name];
    if (!chosen) throw new PackError(`Unknown --variant ${name} for ${model.id}; one of ${Object.keys(model.variants.choices).join(', ')}`);
    return { model, variant: name, files: [...model.files, ...chosen.files], options: { ...model.options, ...chosen.options } };
  });
}

const HEX40 = /^[0-9a-f]{40}$/;
const HEX64 = /^[0-9a-f]{64}$/;

/** Refuses a malformed pack (a revision that is not a commit sha, a checksum that is not sha256, a duplicate id). */
export function checkPack(pack: ModelPack): void {
  const ids = new Set<string>();
  for (const model of pack.models) {
    if (ids.has(model.id)) throw new PackError(`Pack ${pack.name} lists ${model.id} twice`);
    ids.add(model.id);
    if (!HEX40.test(model.revision)) throw new PackError(`Pack ${pack.name}, ${model.id}: revision ${JSON.stringify(model.revision)} is not a full commit sha`);
    const all = [...model.files, ...Object.values(model.variants?.choices ?? {}).flatMap((v) => v.files)];
    for (const file of all) {
      if (file.sha256 !== null && !HEX64.test(file.sha256))
        throw new PackError(`Pack ${pack.name}, ${model.repo}/${file.path}: ${JSON.stringify(file.sha256)} is not a sha256`);
      if (file.size !== null && !(Number.isInteger(file.size) && file.size >= 0))
        throw new PackError(`Pack ${pack.name}, ${model.repo}/${file.path}: size ${file.size} is not a byte count`);
      if (model.modelDir && !file.path.startsWith(`${model.modelDir}/`))
        throw new PackError(`Pack ${pack.name}, ${model.id}: ${file.path} is outside ${model.modelDir}/`);
    }
    if (model.variants && !model.variants.choices[model.variants.default])
      throw new PackError(`Pack ${pack.name}, ${model.id}: default variant ${model.variants.default} is not one of its variants`);
  }
}

/** The pins a pack leaves to the hub's listing (no sha256 read from a page), as `repo/path` strings. */
export function unpinnedChecksums(resolved: ResolvedModel[]): string[] {
  return resolved.flatMap((r) => r.files.filter((f) => f.sha256 === null).map((f) => `${r.model.repo}/${f.path}`));
}
