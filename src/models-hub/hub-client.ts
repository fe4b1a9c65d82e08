/**
 * A small client for the Hugging Face hub's HTTP API (or a mirror with the same API): resolves a revision
 * to its commit, lists the repository's files with their sizes and checksums, and turns hub failures into
 * errors an operator can act on (repo not found, gated, bad token, no network). Used by `npm run
 * models:pull`; the downloads themselves are in download.ts.
 */
import { HubError, isRetryableStatus, networkError, retryDelayMs, sleep, type RetryPolicy } from './hub-errors.js';

export { HubError } from './hub-errors.js';

export const DEFAULT_ENDPOINT = 'https://huggingface.co';

/** One file of a repository at one commit. */
export interface HubFile {
  path: string;
  size: number;
  /** sha256 of the content for LFS (large) files: what the download is checked against. */
  sha256?: string;
  /** Git blob id (sha1 of "blob <size>\0" + content) for small files kept in git itself. */
  gitOid?: string;
}

export interface RepoListing {
  repo: string;
  revision: string;
  /** The commit the revision pointed at: every file is downloaded from this commit, so they match. */
  commit: string;
  files: HubFile[];
}

export interface HubClientOptions {
  endpoint?: string;
  token?: string;
  retry?: Partial<RetryPolicy>;
  /** A request that sends no data for this long is abandoned (and retried). */
  stallTimeoutMs?: number;
  userAgent?: string;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 5, baseDelayMs: 1000, maxDelayMs: 30_000 };

const HEX64 = /^[0-9a-f]{64}$/;
const HEX40 = /^[0-9a-f]{40}$/;

/** `refs/pr/1` → `refs%2Fpr%2F1` (the hub takes the revision as one path segment); paths keep their slashes. */
const encodeRevision = (revision: string) => encodeURIComponent(revision);
const encodePath = (file: string) => file.split('/').map(encodeURIComponent).join('/');

export class HubClient {
  readonly endpoint: string;
  readonly retry: RetryPolicy;
  readonly stallTimeoutMs: number;
  private readonly token: string | undefined;
  private readonly userAgent: string;

  constructor(options: HubClientOptions = {}) {
    this.endpoint = (options.endpoint ?? DEFAULT_ENDPOINT).replace(/\/+$/, '');
    this.token = options.token || undefined;
    this.retry = { ...DEFAULT_RETRY, ...options.retry };
    this.stallTimeoutMs = options.stallTimeoutMs ?? 60_000;
    this.userAgent = options.userAgent ?? `kuma-models-pull/0.1 node/${process.versions.node}`;
  }

  get hasToken(): boolean {
    return this.token !== undefined;
  }

  /** Where a file's bytes are served (the hub answers with a redirect to its storage for large files). */
  resolveUrl(repo: string, commit: string, file: string): string {
    return `${this.endpoint}/${repo}/resolve/${encodeRevision(commit)}/${encodePath(file)}`;
  }

  /**
   * Headers for a request to `url`: the token goes only to the hub's own origin, never to the storage
   * hosts it redirects to (their signed URLs carry their own authorisation).
   */
  headers(url: string, extra: Record<string, string> = {}): Record<string, string> {
    const headers: Record<string, string> = { 'user-agent': this.userAgent, ...extra };
    if (this.token && new URL(url).origin === new URL(this.endpoint).origin) headers.authorization = `Bearer ${this.token}`;
    return headers;
  }

  /** Lists the files of `repo` at `revision`, with sizes and checksums. */
  async listFiles(repo: string, revision: string): Promise<RepoListing> {
    if (!/^[\w.-]+(\/[\w.-]+)?$/.test(repo))
      throw new HubError('bad-request', `"${repo}" is not a Hugging Face repo id (expected owner/name, e.g. facebook/mms-tts-bam)`);
    // One call gives the commit and, with blobs=true, each file's size and LFS sha256.
    const info = (await this.getJson(`${this.endpoint}/api/models/${repo}/revision/${encodeRevision(revision)}?blobs=true`, { repo, revision })) as {
      sha?: unknown;
      siblings?: Array<{ rfilename?: unknown; size?: unknown; blobId?: unknown; lfs?: { sha256?: unknown; size?: unknown } }>;
    };
    if (typeof info.sha !== 'string' || !Array.isArray(info.siblings)) {
      throw new HubError(
        'bad-response',
        `${this.endpoint} answered the model info request for ${repo} without a commit or a file list: is it a Hugging Face hub endpoint?`,
      );
    }
    const commit = info.sha;
    let files: HubFile[] = info.siblings.map((s) => ({
      path: String(s.rfilename),
      size: typeof s.lfs?.size === 'number' ? s.lfs.size : Number(s.size),
      ...(typeof s.lfs?.sha256 === 'string' && HEX64.test(s.lfs.sha256) ? { sha256: s.lfs.sha256 } : {}),
      ...(!s.lfs && typeof s.blobId === 'string' && HEX40.test(s.blobId) ? { gitOid: s.blobId } : {}),
    }));
    // Mirrors that ignore blobs=true list names only: the tree listing has the sizes and checksums.
    if (files.some((f) => !Number.isFinite(f.size))) files = await this.listTree(repo, commit);
    return { repo, revision, commit, files: files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)) };
  }

  /** `GET /api/models/{repo}/tree/{commit}?recursive=true`, following its `Link: rel="next"` pages. */
  private async listTree(repo: string, commit: string): Promise<HubFile[]> {
    const files: HubFile[] = [];
    let url: string | null = `${this.endpoint}/api/models/${repo}/tree/${encodeRevision(commit)}?recursive=true&expand=false`;
    while (url) {
      const { body, next } = await this.getJsonPage(url, { repo, revision: commit });
      if (!Array.isArray(body)) throw new HubError('bad-response', `${url} did not answer with a file list`);
      for (const entry of body as Array<{ type?: unknown; path?: unknown; size?: unknown; oid?: unknown; lfs?: { oid?: unknown; size?: unknown } }>) {
        if (entry.type !== 'file') continue;
        const lfsOid = typeof entry.lfs?.oid === 'string' ? entry.lfs.oid : undefined;
        files.push({
          path: String(entry.path),
          size: typeof entry.lfs?.size === 'number' ? entry.lfs.size : Number(entry.size),
          ...(lfsOid && HEX64.test(lfsOid) ? { sha256: lfsOid } : {}),
          ...(!entry.lfs && typeof entry.oid === 'string' && HEX40.test(entry.oid) ? { gitOid: entry.oid } : {}),
        });
      }
      url = next;
    }
    const unsized = files.find((f) => !Number.isFinite(f.size) || f.size < 0);
    if (unsized) throw new HubError('bad-response', `The hub's file list gives no size for ${unsized.path}`);
    return files;
  }

  private async getJson(url: string, context: { repo: string; revision: string }): Promise<unknown> {
    return (await this.getJsonPage(url, context)).body;
  }

  private async getJsonPage(url: string, context: { repo: string; revision: string }): Promise<{ body: unknown; next: string | null }> {
    const response = await this.request(url, {}, context);
    const text = await response.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new HubError('bad-response', `${url} did not answer with JSON (HTTP ${response.status}): is ${this.endpoint} a Hugging Face hub endpoint?`);
    }
    const link = response.headers.get('link');
    const next = link ? (/<([^>]+)>\s*;\s*rel="?next"?/.exec(link)?.[1] ?? null) : null;
    return { body, next: next ? new URL(next, url).href : null };
  }

  /**
   * One API request with retries (network failures, 429, 5xx) and backoff; other failures become a
   * HubError that says what to do.
   */
  async request(url: string, extraHeaders: Record<string, string>, context: { repo: string; revision: string; file?: string }): Promise<Response> {
    for (let attempt = 1; ; attempt++) {
      let response: Response;
      try {
        response = await fetch(url, { headers: this.headers(url, extraHeaders), signal: AbortSignal.timeout(this.stallTimeoutMs) });
      } catch (err) {
        if (attempt >= this.retry.attempts) throw networkError(err, url, attempt, this.endpoint);
        await sleep(retryDelayMs(this.retry, attempt));
        continue;
      }
      if (response.ok) return response;
      if (isRetryableStatus(response.status) && attempt < this.retry.attempts) {
        await response.body?.cancel();
        await sleep(retryDelayMs(this.retry, attempt, response.headers.get('retry-after')));
        continue;
      }
      throw await this.statusError(response, context);
    }
  }

  /** Turns a failed hub response into an error naming the cause and the fix. */
  async statusError(response: Response, context: { repo: string; revision: string; file?: string }): Promise<HubError> {
    const code = response.headers.get('x-error-code') ?? '';
    let message = response.headers.get('x-error-message') ?? '';
    if (!message)
      message = await response.text().then(
        (t) => {
          try {
            return String((JSON.parse(t) as { error?: unknown }).error ?? '');
          } catch {
            return t.slice(0, 200);
          }
        },
        () => '',
      );
    await response.body?.cancel().catch(() => undefined);
    const { repo, revision, file } = context;
    const status = response.status;
    const tokenHint = this.hasToken
      ? 'HF_TOKEN is set: check that it is valid and that its account has been granted access to this repo'
      : 'set HF_TOKEN to a Hugging Face access token (https://huggingface.co/settings/tokens) of an account that has access';
    const detail = message ? ` (hub says: ${message.trim()})` : '';
    if (code === 'GatedRepo' || (status === 403 && /gated|access to model/i.test(message))) {
      return new HubError('gated', `${repo} is a gated repo: accept its conditions on ${this.endpoint}/${repo}, then ${tokenHint}${detail}`, status);
    }
    if (code === 'RevisionNotFound') return new HubError('not-found', `${repo} has no revision "${revision}"${detail}`, status);
    if (code === 'EntryNotFound' || (status === 404 && file && code !== 'RepoNotFound')) {
      return new HubError('not-found', `${repo}@${revision} has no file ${file ?? ''}${detail}`, status);
    }
    if (code === 'RepoNotFound' || status === 404) {
      const privateHint = this.hasToken ? '' : ' If it is a private repo, set HF_TOKEN to a token that can read it.';
      return new HubError('not-found', `Repository ${repo} not found on ${this.endpoint}: check the repo id.${privateHint}${detail}`, status);
    }
    if (status === 401 || status === 403) {
      return new HubError('unauthorized', `The hub refused access to ${repo} (HTTP ${status}): ${tokenHint}${detail}`, status);
    }
    if (status === 416) return new HubError('range', `Range not satisfiable for ${file ?? repo}`, status);
    return new HubError('http', `${this.endpoint} answered HTTP ${status} for ${file ? `${repo}/${file}` : repo}${detail}`, status);
  }
}
