/**
 * Kuma Studio's browser assets, built when the server starts: esbuild bundles the page's TypeScript and
 * CSS from src/studio/web in memory (≈ 30 ms today; nothing is written, so `npm start` on a fresh clone serves
 * the current sources and no build step can be forgotten), and each file is hashed and precompressed
 * once. The result is the static site the transport serves (transport/static-site.ts).
 *
 * Names: the scripts (the page's, and its audio worklets') get content hashes (`/studio/app-<hash>.js`) and
 * are cached for a year (`immutable`); the page at `/` is revalidated on every load (`no-cache`, with its
 * ETag), so a new build is picked up at once. The stylesheet is inlined into the page. The page is served
 * with a Content-Security-Policy that allows scripts from this origin only (no inline script, no eval),
 * styles from this origin plus the one inline stylesheet (by its hash), audio from blob: URLs (streamed
 * speech), and connections to this origin (REST and the realtime WebSocket).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';
import { build } from 'esbuild';
import type { Logger } from '../observability/logger.js';
import type { StaticAsset, StaticSite } from '../transport/static-site.js';

const WEB_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'web');

/** The page's policy; `styleHash` allows exactly the one inline stylesheet the build puts in the page. */
export const studioCsp = (styleHash: string) =>
  [
    "default-src 'none'",
    "script-src 'self'",
    `style-src 'self' '${styleHash}'`,
    "img-src 'self' data:",
    "media-src 'self' blob:",
    "connect-src 'self'",
    "worker-src 'self'",
    "manifest-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');

const IMMUTABLE = 'public, max-age=31536000, immutable';
const REVALIDATE = 'no-cache';

const CONTENT_TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
};

/**
 * What the page needs to know about this server: the name of the vendor extension object (`djelia`), and
 * whether it serves the demo models (the page then says so, with samples they know).
 */
export interface StudioSettings {
  vendor: string;
  demoModels?: boolean;
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Builds the site from `webDir` (the repository's src/studio/web by default). */
export async function buildStudioSite(settings: StudioSettings, webDir = WEB_DIR): Promise<StaticSite> {
  const result = await build({
    entryPoints: { app: path.join(webDir, 'app.ts'), worklet: path.join(webDir, 'worklet.ts'), styles: path.join(webDir, 'styles.css') },
    bundle: true,
    minify: true,
    format: 'esm',
    target: ['chrome109', 'firefox115', 'safari16'],
    outdir: '/studio',
    entryNames: '[name]-[hash]',
    write: false,
    logLevel: 'silent',
    legalComments: 'none',
  });
  const site = new Map<string, StaticAsset>();
  const names: Record<string, string> = {};
  for (const file of result.outputFiles) {
    if (file.path.endsWith('.css')) continue; // inlined into the page below
    const urlPath = `/studio/${path.basename(file.path)}`;
    names[path.basename(file.path).replace(/-[A-Z0-9]+\./, '.')] = urlPath;
    site.set(urlPath, asset(file.contents, CONTENT_TYPES[path.extname(file.path)] ?? 'application/octet-stream', IMMUTABLE));
  }
  const template = fs.readFileSync(path.join(webDir, 'index.html'), 'utf8');
  // The stylesheet goes inline (allowed by its hash alone): it blocks rendering, and a second request for
  // it cost the first paint a round trip (bench:studio, load-tests/RESULTS.md).
  const css = result.outputFiles.find((file) => file.path.endsWith('.css'));
  if (!css) throw new Error('studio build: no stylesheet was produced');
  const styleText = css.text.trim();
  const styleHash = `sha256-${crypto.createHash('sha256').update(styleText).digest('base64')}`;
  const page = template
    .replace('{{styles.css:inline}}', () => styleText)
    .replace(/\{\{([a-z-]+(?:\.js|\.css)?)\}\}/g, (_, name: string) => {
      if (name === 'vendor') return escapeHtml(settings.vendor);
      if (name === 'demo-models') return settings.demoModels ? 'true' : 'false';
      const url = names[name];
      if (!url) throw new Error(`studio build: index.html names ${name}, which the build did not produce`);
      return url;
    });
  site.set('/', asset(new TextEncoder().encode(page), CONTENT_TYPES['.html']!, REVALIDATE, { 'content-security-policy': studioCsp(styleHash) }));
  return site;
}

function asset(body: Uint8Array, contentType: string, cacheControl: string, headers?: Record<string, string>): StaticAsset {
  const etag = `"${crypto.createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
  const out: StaticAsset = { contentType, body, etag, cacheControl, ...(headers ? { headers } : {}) };
  // Small files gain nothing from compression (and may grow); keep a form only when it is smaller.
  const br = zlib.brotliCompressSync(body, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: body.length } });
  const gzip = zlib.gzipSync(body, { level: 9 });
  if (br.length < body.length) out.br = new Uint8Array(br.buffer, br.byteOffset, br.length);
  if (gzip.length < body.length) out.gzip = new Uint8Array(gzip.buffer, gzip.byteOffset, gzip.length);
  return out;
}

const built = new Map<string, Promise<StaticSite>>();

/**
 * The site, built once per process and settings (servers started in one process share it). A failed build is logged
 * and the server serves the API alone: the page must never keep the API from starting.
 */
export async function studioSite(logger: Logger, settings: StudioSettings): Promise<StaticSite | undefined> {
  const key = JSON.stringify(settings);
  const site = built.get(key) ?? buildStudioSite(settings);
  built.set(key, site);
  try {
    return await site;
  } catch (err) {
    built.delete(key);
    logger.error({ err: (err as Error).message }, 'Kuma Studio could not be built; serving the API only');
    return undefined;
  }
}
