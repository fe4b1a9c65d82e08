/**
 * A local imitation of the Hugging Face hub for the models:pull tests: the model info API (with
 * `blobs=true` sizes and LFS sha256), the paginated tree API, `resolve` URLs that redirect large files to a
 * separate "storage" origin (a second port, as the real hub redirects to its CDN) with `x-linked-etag`,
 * Range support, and faults to inject: a connection cut once midway, altered bytes, Range ignored, error
 * statuses, a gated repo. Every request is recorded with its Range and Authorization headers.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

export interface FakeRepoSpec {
  id: string;
  dir: string;
  /** Gated: 401 GatedRepo without `Authorization: Bearer <token>`. */
  gatedToken?: string;
}

interface FakeFile {
  path: string;
  bytes: Buffer;
  lfs: boolean;
  sha256: string;
  gitOid: string;
}

export interface RecordedRequest {
  server: 'hub' | 'storage';
  url: string;
  range?: string;
  authorization?: string;
}

/** Files above this size are LFS files (served through the storage redirect); smaller ones are git blobs. */
const LFS_THRESHOLD = 10_000;
const TREE_PAGE = 3;

function readRepo(dir: string): FakeFile[] {
  const files: FakeFile[] = [];
  const walk = (sub: string) => {
    for (const entry of fs.readdirSync(path.join(dir, sub), { withFileTypes: true })) {
      const rel = sub ? `${sub}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(rel);
      else if (!entry.name.startsWith('.')) {
        const bytes = fs.readFileSync(path.join(dir, rel));
        files.push({
          path: rel,
          bytes,
          lfs: bytes.length > LFS_THRESHOLD,
          sha256: createHash('sha256').update(bytes).digest('hex'),
          gitOid: createHash('sha1').update(`blob ${bytes.length}\0`).update(bytes).digest('hex'),
        });
      }
    }
  };
  walk('');
  return files.sort((a, b) => a.path.localeCompare(b.path));
}

export class FakeHub {
  readonly requests: RecordedRequest[] = [];
  /** Repo file path → bytes to send before cutting the connection (once). */
  readonly cutOnce = new Map<string, number>();
  /** Repo file paths served with one byte changed. */
  readonly corrupt = new Set<string>();
  ignoreRange = false;
  /** Answer the info API without sizes (some mirrors), so the client must use the tree API. */
  infoWithoutSizes = false;
  /** Statuses to answer (once each) before serving normally, e.g. [503, 503]. */
  readonly failNext: number[] = [];
  private readonly repos = new Map<string, { spec: FakeRepoSpec; commit: string; files: FakeFile[] }>();
  private readonly bySha = new Map<string, FakeFile>();
  private hub!: http.Server;
  private storage!: http.Server;
  url = '';
  storageUrl = '';

  constructor(specs: FakeRepoSpec[]) {
    for (const spec of specs) {
      const files = readRepo(spec.dir);
      const commit = createHash('sha1').update(spec.id).digest('hex');
      this.repos.set(spec.id, { spec, commit, files });
      for (const f of files) if (f.lfs) this.bySha.set(f.sha256, f);
    }
  }

  async start(): Promise<this> {
    this.hub = http.createServer((req, res) => this.onHub(req, res));
    this.storage = http.createServer((req, res) => this.onStorage(req, res));
    const listen = (server: http.Server) =>
      new Promise<string>((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
    this.url = await listen(this.hub);
    this.storageUrl = await listen(this.storage);
    return this;
  }

  async close(): Promise<void> {
    for (const server of [this.hub, this.storage]) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  }

  /** The commit this hub serves `repo` at (what `main` resolves to). */
  commitOf(repo: string): string {
    return this.repos.get(repo)!.commit;
  }

  fileOf(repo: string, file: string): Buffer {
    return this.repos.get(repo)!.files.find((f) => f.path === file)!.bytes;
  }

  private record(server: RecordedRequest['server'], req: http.IncomingMessage): void {
    this.requests.push({ server, url: req.url ?? '', range: req.headers.range, authorization: req.headers.authorization });
  }

  private error(res: http.ServerResponse, status: number, code: string, message: string): void {
    res.writeHead(status, { 'content-type': 'application/json', ...(code ? { 'x-error-code': code } : {}), 'x-error-message': message });
    res.end(JSON.stringify({ error: message }));
  }

  private onHub(req: http.IncomingMessage, res: http.ServerResponse): void {
    this.record('hub', req);
    const failure = this.failNext.shift();
    if (failure) return this.error(res, failure, '', 'injected failure');
    const url = new URL(req.url ?? '/', this.url);
    const api = /^\/api\/models\/([^/]+\/[^/]+)\/(revision|tree)\/([^/]+)$/.exec(url.pathname);
    const resolve = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(url.pathname);
    const repoId = api?.[1] ?? resolve?.[1];
    const repo = repoId ? this.repos.get(repoId) : undefined;
    if (!repo) return this.error(res, 404, 'RepoNotFound', 'Repository not found');
    if (repo.spec.gatedToken && req.headers.authorization !== `Bearer ${repo.spec.gatedToken}`) {
      return this.error(res, 401, 'GatedRepo', `Access to model ${repoId} is restricted. You must have access to it and be authenticated to access it.`);
    }
    const revision = decodeURIComponent((api?.[3] ?? resolve?.[2])!);
    if (revision !== 'main' && revision !== repo.commit) return this.error(res, 404, 'RevisionNotFound', `Invalid rev id: ${revision}`);

    if (api?.[2] === 'revision') {
      const blobs = url.searchParams.get('blobs') === 'true' && !this.infoWithoutSizes;
      const siblings = repo.files.map((f) =>
        blobs
          ? {
              rfilename: f.path,
              size: f.bytes.length,
              blobId: f.gitOid,
              ...(f.lfs ? { lfs: { sha256: f.sha256, size: f.bytes.length, pointerSize: 134 } } : {}),
            }
          : { rfilename: f.path },
      );
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ id: repoId, sha: repo.commit, siblings }));
    }
    if (api?.[2] === 'tree') {
      const start = Number(url.searchParams.get('cursor') ?? 0);
      const page = repo.files.slice(start, start + TREE_PAGE).map((f) => ({
        type: 'file',
        path: f.path,
        size: f.lfs ? 134 : f.bytes.length, // an LFS file's git size is its pointer's
        oid: f.lfs ? 'f'.repeat(40) : f.gitOid,
        ...(f.lfs ? { lfs: { oid: f.sha256, size: f.bytes.length, pointerSize: 134 } } : {}),
      }));
      const next = start + TREE_PAGE < repo.files.length ? `<${url.pathname}?recursive=true&cursor=${start + TREE_PAGE}>; rel="next"` : undefined;
      res.writeHead(200, { 'content-type': 'application/json', ...(next ? { link: next } : {}) });
      return void res.end(JSON.stringify(page));
    }
    const file = repo.files.find((f) => f.path === decodeURIComponent(resolve![3]!));
    if (!file) return this.error(res, 404, 'EntryNotFound', 'Entry not found');
    if (file.lfs) {
      res.writeHead(302, {
        location: `${this.storageUrl}/blobs/${file.sha256}?signature=abc`,
        'x-linked-etag': `"${file.sha256}"`,
        'x-linked-size': String(file.bytes.length),
        'x-repo-commit': repo.commit,
      });
      return void res.end();
    }
    this.serveBytes(req, res, file);
  }

  private onStorage(req: http.IncomingMessage, res: http.ServerResponse): void {
    this.record('storage', req);
    const sha = /^\/blobs\/([0-9a-f]{64})/.exec(req.url ?? '')?.[1];
    const file = sha ? this.bySha.get(sha) : undefined;
    if (!file) return this.error(res, 404, '', 'no such blob');
    this.serveBytes(req, res, file);
  }

  /** Serves a file, honouring `Range: bytes=N-` with 206 (unless told to ignore it), with the injected faults. */
  private serveBytes(req: http.IncomingMessage, res: http.ServerResponse, file: FakeFile): void {
    let bytes = file.bytes;
    if (this.corrupt.has(file.path)) {
      bytes = Buffer.from(bytes);
      bytes[bytes.length >> 1]! ^= 0xff;
    }
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    const start = range && !this.ignoreRange ? Number(range[1]) : 0;
    if (start >= bytes.length && bytes.length > 0) {
      res.writeHead(416, { 'content-range': `bytes */${bytes.length}` });
      return void res.end();
    }
    const body = bytes.subarray(start);
    res.writeHead(start > 0 ? 206 : 200, {
      'content-type': 'application/octet-stream',
      'content-length': String(body.length),
      'accept-ranges': 'bytes',
      etag: `"${file.lfs ? file.sha256 : file.gitOid}"`,
      ...(start > 0 ? { 'content-range': `bytes ${start}-${bytes.length - 1}/${bytes.length}` } : {}),
    });
    const cut = this.cutOnce.get(file.path);
    if (cut !== undefined && start === 0) {
      this.cutOnce.delete(file.path);
      // Half the body, flushed, then the connection drops: the client sees a body shorter than its length.
      res.write(body.subarray(0, cut), () => setTimeout(() => res.socket?.destroy(), 20));
      return;
    }
    res.end(body);
  }
}
