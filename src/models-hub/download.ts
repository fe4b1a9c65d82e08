/**
 * Downloads one repository file to disk: streamed into `<file>.partial`, resumed with an HTTP Range request
 * after a dropped connection or an interrupted earlier run (only when the server answers 206 from the right
 * offset; a 200 starts over), checked against the hub's checksum (LFS sha256, git blob id for small files,
 * size always), then renamed into place so a model directory never holds a half-written or wrong file.
 */
import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { HubClient, HubFile } from './hub-client.js';
import { diskError, HubError, isRetryableStatus, networkError, retryDelayMs, sleep } from './hub-errors.js';
import type { PullProgress } from './progress.js';

export interface DownloadRequest {
  client: HubClient;
  repo: string;
  revision: string;
  commit: string;
  file: HubFile;
  /** Where the file goes (its repo path below it). */
  destDir: string;
  progress: PullProgress;
}

export interface DownloadResult {
  sha256: string;
  /** Which checksum the content was verified against ('size' when the hub published none). */
  verified: 'sha256' | 'git-oid' | 'size';
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const MAX_REDIRECTS = 10;

/** The local path of a repo file, refusing names that would escape the destination. */
export function localPath(destDir: string, repoPath: string): string {
  const parts = repoPath.split('/');
  if (!repoPath || repoPath.startsWith('/') || parts.some((p) => p === '..' || p === '' || p === '.')) {
    throw new HubError('bad-response', `The hub listed a file with an unsafe path: ${JSON.stringify(repoPath)}`);
  }
  return path.join(destDir, ...parts);
}

/** sha256 of everything, and the git blob id (sha1 of "blob <size>\0" + content) for files kept in git. */
class ContentHash {
  sha256: Hash = createHash('sha256');
  gitSha1: Hash | null = null;
  constructor(private readonly file: HubFile) {
    this.reset();
  }
  reset(): void {
    this.sha256 = createHash('sha256');
    this.gitSha1 = this.file.gitOid ? createHash('sha1').update(`blob ${this.file.size}\0`) : null;
  }
  update(chunk: Uint8Array): void {
    this.sha256.update(chunk);
    this.gitSha1?.update(chunk);
  }
}

async function hashExisting(file: string, hash: ContentHash): Promise<void> {
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 })) hash.update(chunk as Buffer);
}

const unquote = (etag: string | null) => etag?.replace(/^W\//, '').replace(/^"|"$/g, '') ?? null;

/** GET with the Range header kept on every hop, and the hub's `x-linked-*` headers read off its redirect. */
async function openStream(request: DownloadRequest, offset: number, signal: AbortSignal) {
  const { client } = request;
  let url = client.resolveUrl(request.repo, request.commit, request.file.path);
  let linkedEtag: string | null = null;
  let linkedSize: number | null = null;
  for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
    const headers = client.headers(url, { 'accept-encoding': 'identity', ...(offset > 0 ? { range: `bytes=${offset}-` } : {}) });
    const response = await fetch(url, { headers, redirect: 'manual', signal });
    linkedEtag ??= unquote(response.headers.get('x-linked-etag'));
    const size = response.headers.get('x-linked-size');
    if (linkedSize === null && size && /^\d+$/.test(size)) linkedSize = Number(size);
    if (!REDIRECTS.has(response.status)) return { response, linkedEtag, linkedSize };
    const location = response.headers.get('location');
    await response.body?.cancel();
    if (!location) throw new HubError('bad-response', `HTTP ${response.status} without a Location header for ${request.file.path}`);
    url = new URL(location, url).href;
  }
  throw new HubError('bad-response', `More than ${MAX_REDIRECTS} redirects for ${request.file.path}`);
}

/** `bytes 100-999/1000` → 100 (the start the server actually sent from). */
const rangeStart = (contentRange: string | null) => {
  const match = contentRange ? /^bytes\s+(\d+)-\d+\/(\d+|\*)$/.exec(contentRange.trim()) : null;
  return match ? Number(match[1]) : null;
};

export async function downloadFile(request: DownloadRequest): Promise<DownloadResult> {
  const { client, file, progress } = request;
  const finalPath = localPath(request.destDir, file.path);
  const partialPath = `${finalPath}.partial`;
  const context = { repo: request.repo, revision: request.revision, file: file.path };
  await fs.mkdir(path.dirname(finalPath), { recursive: true }).catch((err) => {
    throw diskError(err, path.dirname(finalPath), 'create the folder');
  });

  const hash = new ContentHash(file);
  let offset = 0;
  const leftover = await fs.stat(partialPath).catch(() => null);
  if (leftover && leftover.size <= file.size) {
    // An earlier run stopped here: hash what it wrote and continue from its end.
    await hashExisting(partialPath, hash);
    offset = leftover.size;
    progress.resumed(offset);
  } else if (leftover) {
    await fs.rm(partialPath, { force: true });
  }
  /** A leftover may come from another revision of the file: if the result is wrong, one clean retry. */
  let mayStartOver = offset > 0;
  let linkedEtag: string | null = null;
  let linkedSize: number | null = null;

  const startOver = async () => {
    hash.reset();
    offset = 0;
    progress.discard();
    await fs.rm(partialPath, { force: true });
  };

  for (let attempt = 1; ; attempt++) {
    const stall = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const armStall = () => {
      clearTimeout(timer);
      timer = setTimeout(() => stall.abort(new HubError('network', `no data for ${client.stallTimeoutMs / 1000} s`)), client.stallTimeoutMs);
    };
    try {
      if (offset < file.size || file.size === 0) {
        armStall();
        const opened = await openStream(request, offset, stall.signal);
        const { response } = opened;
        linkedEtag ??= opened.linkedEtag;
        linkedSize ??= opened.linkedSize;
        if (response.status === 416 && offset > 0) {
          // The server says our offset is past the end: the leftover is not a prefix of this file.
          await response.body?.cancel();
          progress.note('the partial file does not match the server copy; starting over');
          await startOver();
          mayStartOver = false;
          continue;
        }
        if (!response.ok) throw await client.statusError(response, context);
        if (offset > 0 && response.status === 206 && rangeStart(response.headers.get('content-range')) !== offset) {
          await response.body?.cancel();
          throw new HubError(
            'bad-response',
            `Asked for ${file.path} from byte ${offset}, the server sent Content-Range ${response.headers.get('content-range')}`,
          );
        }
        if (offset > 0 && response.status !== 206) {
          progress.note(`the server ignored the Range request (HTTP ${response.status}); downloading from the start`);
          hash.reset();
          offset = 0;
          progress.discard();
        }
        const handle = await fs.open(partialPath, offset > 0 ? 'a' : 'w').catch((err) => {
          throw diskError(err, partialPath, 'open');
        });
        try {
          if (response.body) {
            for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
              armStall();
              if (offset + chunk.length > file.size)
                throw new HubError('bad-response', `The server sent more than the ${file.size} bytes listed for ${file.path}`);
              await handle.write(chunk).catch((err) => {
                throw diskError(err, partialPath, 'write');
              });
              hash.update(chunk);
              offset += chunk.length;
              progress.advance(chunk.length);
            }
          }
          await handle.sync();
        } finally {
          await handle.close();
        }
      }
      clearTimeout(timer);
      if (offset !== file.size) throw new HubError('network', `the connection ended after ${offset} of ${file.size} bytes`);
      const sha256 = hash.sha256.digest('hex');
      const gitOid = hash.gitSha1?.digest('hex');
      const expected = file.sha256 ?? (linkedEtag && /^[0-9a-f]{64}$/.test(linkedEtag) ? linkedEtag : undefined);
      const verified: DownloadResult['verified'] = expected ? 'sha256' : file.gitOid ? 'git-oid' : 'size';
      const bad = (expected && sha256 !== expected) || (file.gitOid && gitOid !== file.gitOid) || (linkedSize !== null && linkedSize !== file.size);
      if (bad) {
        if (mayStartOver) {
          progress.note('the resumed file failed its checksum; downloading it again from the start');
          await startOver();
          mayStartOver = false;
          continue;
        }
        await fs.rm(partialPath, { force: true });
        const want = expected ? `sha256 ${expected}` : file.gitOid ? `git blob ${file.gitOid}` : `${linkedSize} bytes`;
        const got = expected ? `sha256 ${sha256}` : file.gitOid ? `git blob ${gitOid}` : `${file.size} bytes`;
        throw new HubError(
          'checksum',
          `Checksum mismatch for ${file.path}: expected ${want}, got ${got}. The download was deleted; run the command again (a proxy or mirror may be altering files).`,
        );
      }
      await fs.rename(partialPath, finalPath).catch((err) => {
        throw diskError(err, finalPath, 'move the download into place at');
      });
      return { sha256, verified };
    } catch (err) {
      clearTimeout(timer);
      const reason = stall.signal.aborted ? stall.signal.reason : err;
      const retryable =
        reason instanceof HubError
          ? reason.kind === 'network' || (reason.kind === 'http' && reason.status !== undefined && isRetryableStatus(reason.status))
          : isNetworkFailure(reason);
      if (!retryable) throw reason;
      if (attempt >= client.retry.attempts) throw networkError(reason, client.resolveUrl(request.repo, request.commit, file.path), attempt, client.endpoint);
      progress.note(`${reasonText(reason)}; retrying (${attempt}/${client.retry.attempts - 1})${offset > 0 ? ` from byte ${offset}` : ''}`);
      await sleep(retryDelayMs(client.retry, attempt));
    }
  }
}

/** What undici throws when a connection fails or drops mid-body (as opposed to a bug or a disk error). */
function isNetworkFailure(err: unknown): boolean {
  for (let current = err as { name?: string; message?: string; code?: string; cause?: unknown } | undefined, depth = 0; current && depth < 5; depth++) {
    if (current.name === 'AbortError' || current.name === 'TimeoutError') return true;
    if (current.name === 'TypeError' && (current.message === 'fetch failed' || current.message === 'terminated')) return true;
    if (typeof current.code === 'string' && /^(UND_ERR|ECONN|EPIPE|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|ENOTFOUND|EAI_AGAIN)/.test(current.code)) return true;
    current = current.cause as typeof current;
  }
  return false;
}

function reasonText(err: unknown): string {
  if (err instanceof HubError) return err.message;
  const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
  const message = cause?.message ?? (err as Error)?.message ?? String(err);
  return `connection lost (${cause?.code ? `${cause.code}: ` : ''}${message})`;
}
