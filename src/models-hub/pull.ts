/**
 * Pulls a model directory from the Hugging Face hub: lists the files of one commit, keeps those the
 * --include/--exclude patterns select, checks there is room on disk, skips files already present and
 * verified, and downloads the rest one after the other (download.ts). A small state file
 * (`.kuma-pull.json`) records what was verified, so a second run does not re-hash gigabytes.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { HubClient, type HubClientOptions, type HubFile, type RepoListing } from './hub-client.js';
import { diskError, formatBytes, HubError } from './hub-errors.js';
import { downloadFile, localPath } from './download.js';
import type { PinnedFile } from './pack.js';
import { PullProgress, type ProgressSink } from './progress.js';

export const STATE_FILE = '.kuma-pull.json';

export interface PullOptions extends HubClientOptions {
  repo: string;
  revision?: string;
  /** Glob patterns as in `huggingface-cli download --include` (`*` also crosses `/`; `dir/` means `dir/*`). */
  include?: string[];
  exclude?: string[];
  /**
   * Exactly these files, for a pack: `revision` must then be a commit sha, and each file's sha256 and size,
   * where pinned, must match what the hub lists (checked before any download) and what arrives (checked
   * after). Replaces include/exclude.
   */
  pinned?: PinnedFile[];
  /** Absolute destination folder. */
  dest: string;
  progress?: ProgressSink | null;
}

export interface PullResult {
  listing: RepoListing;
  dest: string;
  files: HubFile[];
  downloaded: string[];
  upToDate: string[];
  downloadedBytes: number;
}

interface State {
  repo: string;
  commit: string;
  files: Record<string, { size: number; sha256: string; mtimeMs: number }>;
}

/** fnmatch-style pattern → RegExp (what huggingface_hub's allow_patterns use). */
export function globToRegExp(pattern: string): RegExp {
  const full = pattern.endsWith('/') ? `${pattern}*` : pattern;
  let source = '';
  for (let i = 0; i < full.length; i++) {
    const c = full[i]!;
    if (c === '*') source += '.*';
    else if (c === '?') source += '.';
    else if (c === '[') {
      const end = full.indexOf(']', i + 2);
      if (end < 0) source += '\\[';
      else {
        const body = full.slice(i + 1, end);
        source += `[${body.startsWith('!') ? `^${body.slice(1)}` : body.replace(/\\/g, '\\\\')}]`;
        i = end;
      }
    } else source += c.replace(/[.+^${}()|\\/]/g, '\\$&');
  }
  return new RegExp(`^${source}$`);
}

export function selectFiles(files: HubFile[], include: string[] = [], exclude: string[] = []): HubFile[] {
  const inc = include.map(globToRegExp);
  const exc = exclude.map(globToRegExp);
  return files.filter((f) => f.path !== '.gitattributes' && (!inc.length || inc.some((r) => r.test(f.path))) && !exc.some((r) => r.test(f.path)));
}

async function readState(dest: string): Promise<State | null> {
  try {
    return JSON.parse(await fs.readFile(path.join(dest, STATE_FILE), 'utf8')) as State;
  } catch {
    return null;
  }
}

async function writeState(dest: string, state: State): Promise<void> {
  const file = path.join(dest, STATE_FILE);
  await fs.writeFile(`${file}.tmp`, `${JSON.stringify(state, null, 2)}\n`).catch((err) => {
    throw diskError(err, file, 'write');
  });
  await fs.rename(`${file}.tmp`, file);
}

async function sha256Of(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

async function gitOidOf(file: string, size: number): Promise<string> {
  const hash = createHash('sha1').update(`blob ${size}\0`);
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Is the file already in place with the right content? Trusts the state file when size and mtime agree. */
async function upToDate(dest: string, file: HubFile, state: State | null): Promise<{ sha256: string; mtimeMs: number } | null> {
  const stat = await fs.stat(localPath(dest, file.path)).catch(() => null);
  if (!stat?.isFile() || stat.size !== file.size) return null;
  const known = state?.files[file.path];
  if (known && known.size === file.size && known.mtimeMs === stat.mtimeMs && (!file.sha256 || known.sha256 === file.sha256))
    return { sha256: known.sha256, mtimeMs: stat.mtimeMs };
  const full = localPath(dest, file.path);
  const sha256 = await sha256Of(full);
  const matches = file.sha256 ? sha256 === file.sha256 : file.gitOid ? (await gitOidOf(full, file.size)) === file.gitOid : known?.sha256 === sha256;
  return matches ? { sha256, mtimeMs: stat.mtimeMs } : null;
}

/** Nearest existing folder at or above `dir` (statfs needs one). */
async function existingAncestor(dir: string): Promise<string> {
  let current = dir;
  while (!(await fs.stat(current).catch(() => null))) current = path.dirname(current);
  return current;
}

export async function pullModel(options: PullOptions): Promise<PullResult> {
  const client = new HubClient(options);
  const revision = options.revision ?? 'main';
  const listing = await client.listFiles(options.repo, revision);
  if (options.pinned) {
    if (listing.commit !== revision)
      throw new HubError(
        'bad-response',
        `${options.repo}: the hub resolved the pinned commit ${revision} to ${listing.commit}; is the endpoint a faithful mirror?`,
      );
    return downloadAll(client, options, listing, pinFiles(listing, options.pinned));
  }
  const files = selectFiles(listing.files, options.include, options.exclude);
  // A pattern that matches nothing is almost always a typo or a file the repo does not have (a variant
  // name): stopping here beats downloading gigabytes of a model that will not load.
  const unmatched = (options.include ?? []).filter((p) => !listing.files.some((f) => globToRegExp(p).test(f.path)));
  if (unmatched.length || !files.length) {
    const sample = listing.files
      .slice(0, 40)
      .map((f) => f.path)
      .join(', ');
    const what = unmatched.length
      ? `--include ${unmatched.map((p) => `'${p}'`).join(' ')} matches no file`
      : 'No file is left after the --include/--exclude filters';
    throw new HubError(
      'bad-request',
      `${what} of ${options.repo}@${revision}; its files are: ${sample}${listing.files.length > 40 ? `, … (${listing.files.length} in all)` : ''}`,
    );
  }
  return downloadAll(client, options, listing, files);
}

/**
 * The listed files a pack pins, carrying the pinned sha256 (what the download is then checked against)
 * and refused before any download when the listing disagrees with a pin or lacks a file.
 */
export function pinFiles(listing: RepoListing, pins: PinnedFile[]): HubFile[] {
  const at = `${listing.repo}@${listing.commit}`;
  return pins.map((pin) => {
    const listed = listing.files.find((f) => f.path === pin.path);
    if (!listed) throw new HubError('not-found', `${at} has no ${pin.path}, which the pack pins; nothing was downloaded`);
    if (pin.size !== null && listed.size !== pin.size) {
      throw new HubError(
        'checksum',
        `The hub lists ${pin.path} of ${at} with ${listed.size} bytes, the pack pins ${pin.size}: the endpoint serves other files than the pack was made for; nothing was downloaded`,
      );
    }
    if (pin.sha256 !== null && listed.sha256 !== undefined && listed.sha256 !== pin.sha256) {
      throw new HubError(
        'checksum',
        `The hub lists ${pin.path} of ${at} with sha256 ${listed.sha256}, the pack pins ${pin.sha256}: the endpoint serves other files than the pack was made for; nothing was downloaded`,
      );
    }
    return pin.sha256 !== null ? { ...listed, sha256: pin.sha256 } : listed;
  });
}

async function downloadAll(client: HubClient, options: PullOptions, listing: RepoListing, files: HubFile[]): Promise<PullResult> {
  const revision = options.revision ?? 'main';
  const dest = options.dest;
  const total = files.reduce((n, f) => n + f.size, 0);
  const progress = new PullProgress(options.progress ?? null, total, files.length);
  progress.log(`${options.repo}@${revision} (commit ${listing.commit.slice(0, 12)}): ${files.length} files, ${formatBytes(total)} → ${dest}`);

  const previous = await readState(dest);
  const state: State = { repo: options.repo, commit: listing.commit, files: previous?.repo === options.repo ? previous.files : {} };
  const present = new Map<string, { sha256: string; mtimeMs: number }>();
  for (const file of files) {
    const ok = await upToDate(dest, file, previous?.repo === options.repo ? previous : null);
    if (ok) present.set(file.path, ok);
  }
  const needed = files.filter((f) => !present.has(f.path)).reduce((n, f) => n + f.size, 0);
  const stats = await fs.statfs(await existingAncestor(dest)).catch(() => null);
  if (stats && needed > stats.bavail * stats.bsize) {
    throw new HubError(
      'disk',
      `Not enough disk space in ${dest}: the download needs ${formatBytes(needed)}, ${formatBytes(stats.bavail * stats.bsize)} is free`,
    );
  }
  await fs.mkdir(dest, { recursive: true }).catch((err) => {
    throw diskError(err, dest, 'create the folder');
  });

  const result: PullResult = { listing, dest, files, downloaded: [], upToDate: [], downloadedBytes: 0 };
  for (const file of files) {
    progress.beginFile(file.path, file.size);
    const known = present.get(file.path);
    if (known) {
      state.files[file.path] = { size: file.size, ...known };
      result.upToDate.push(file.path);
      progress.endFile('up to date');
      continue;
    }
    const { sha256 } = await downloadFile({ client, repo: options.repo, revision, commit: listing.commit, file, destDir: dest, progress });
    const stat = await fs.stat(localPath(dest, file.path));
    state.files[file.path] = { size: file.size, sha256, mtimeMs: stat.mtimeMs };
    await writeState(dest, state);
    result.downloaded.push(file.path);
    result.downloadedBytes += file.size;
    progress.endFile('downloaded');
  }
  await writeState(dest, state);
  progress.finish(
    `Done: ${result.downloaded.length} downloaded (${formatBytes(result.downloadedBytes)}), ${result.upToDate.length} already up to date, in ${dest}`,
  );
  return result;
}
