/**
 * Kuma Studio's static site, served by a real server: the page and its hashed assets with the right
 * types, caching, compression (br, gzip or none, as the client accepts), 304 revalidation, HEAD, a strict
 * Content-Security-Policy and no inline script; 404 for other paths and 405 for other methods.
 */
import crypto from 'node:crypto';
import zlib from 'node:zlib';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { acceptedCodings } from '../../src/transport/static-site.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ config: { studio: true } });
});
afterAll(async () => {
  await t?.close();
});

/** A request with exactly these headers (fetch would add its own Accept-Encoding and decompress). */
function get(path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${t.baseUrl}${path}`, { method, headers }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(parts) }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function page(): Promise<{ html: string; script: string; worklet: string; style: string; headers: http.IncomingHttpHeaders }> {
  const res = await get('/');
  const html = res.body.toString('utf8');
  const script = /<script type="module" src="([^"]+)"><\/script>/.exec(html)?.[1];
  const worklet = /<meta name="kuma-worklet" content="([^"]+)">/.exec(html)?.[1];
  const style = /<style>([^<]+)<\/style>/.exec(html)?.[1];
  if (!script || !worklet || !style) throw new Error(`the page names no script, worklet or stylesheet:\n${html}`);
  return { html, script, worklet, style, headers: res.headers };
}

describe('Kuma Studio static site', () => {
  it('serves the page at / with a strict CSP, revalidated on every load, and no inline script or style', async () => {
    const { html, headers } = await page();
    expect(headers['content-type']).toBe('text/html; charset=utf-8');
    expect(headers['cache-control']).toBe('no-cache');
    expect(headers['x-content-type-options']).toBe('nosniff');
    const csp = headers['content-security-policy']!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
    expect(csp).toContain("frame-ancestors 'none'");
    // Every script has a src (CSP would block an inline one anyway) and no element carries a style or handler attribute.
    for (const tag of html.match(/<script\b[^>]*>/g) ?? []) expect(tag).toMatch(/\ssrc="\/studio\//);
    expect(html).not.toMatch(/\s(style|on[a-z]+)=/i);
  });

  it('serves the hashed script and audio worklet with their type, cached for a year', async () => {
    const { script, worklet } = await page();
    expect(script).toMatch(/^\/studio\/app-[A-Z0-9]+\.js$/);
    expect(worklet).toMatch(/^\/studio\/worklet-[A-Z0-9]+\.js$/);
    for (const [url, marker] of [
      [script, 'kuma.apiKey'],
      [worklet, 'kuma-capture'],
    ] as const) {
      const js = await get(url);
      expect(js.status).toBe(200);
      expect(js.headers['content-type']).toBe('text/javascript; charset=utf-8');
      expect(js.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expect(js.body.toString('utf8')).toContain(marker);
    }
  });

  it('inlines the stylesheet, allowed by its hash alone, and the vendor name the page sends', async () => {
    const { html, style, headers } = await page();
    expect(style).toContain('font-family');
    const hash = crypto.createHash('sha256').update(style).digest('base64');
    expect(headers['content-security-policy']).toContain(`style-src 'self' 'sha256-${hash}'`);
    expect(html).toContain('<meta name="kuma-vendor" content="djelia">');
  });

  it('sends br, gzip or the plain body as Accept-Encoding allows, each decoding to the same bytes with its own ETag', async () => {
    const { script } = await page();
    const plain = await get(script);
    const br = await get(script, { 'accept-encoding': 'gzip, deflate, br' });
    const gzip = await get(script, { 'accept-encoding': 'gzip' });
    const refused = await get(script, { 'accept-encoding': 'br;q=0, gzip;q=0' });
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(br.headers['content-encoding']).toBe('br');
    expect(gzip.headers['content-encoding']).toBe('gzip');
    expect(refused.headers['content-encoding']).toBeUndefined();
    expect(zlib.brotliDecompressSync(br.body).equals(plain.body)).toBe(true);
    expect(zlib.gunzipSync(gzip.body).equals(plain.body)).toBe(true);
    expect(br.body.length).toBeLessThan(plain.body.length);
    expect(br.headers.vary).toBe('accept-encoding');
    expect(new Set([plain.headers.etag, br.headers.etag, gzip.headers.etag]).size).toBe(3);
    expect(Number(plain.headers['content-length'])).toBe(plain.body.length);
  });

  it('answers 304 with no body to a matching If-None-Match, whichever representation it names', async () => {
    const first = await get('/', { 'accept-encoding': 'br' });
    for (const tag of [first.headers.etag!, `W/${first.headers.etag}`, `"other", ${first.headers.etag}`]) {
      const again = await get('/', { 'accept-encoding': 'gzip', 'if-none-match': tag });
      expect(again.status).toBe(304);
      expect(again.body.length).toBe(0);
      expect(again.headers['content-security-policy']).toBeDefined();
    }
    expect((await get('/', { 'if-none-match': '"stale"' })).status).toBe(200);
  });

  it('answers HEAD with the headers and no body, other methods with 405 and Allow, other paths with 404', async () => {
    const head = await get('/', {}, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.body.length).toBe(0);
    expect(Number(head.headers['content-length'])).toBeGreaterThan(200);
    const post = await get('/', {}, 'POST');
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET, HEAD');
    const missing = await get('/studio/app-NOPE.js');
    expect(missing.status).toBe(404);
    expect(JSON.parse(missing.body.toString('utf8')).error.code).toBe('unknown_endpoint');
  });
});

describe('acceptedCodings', () => {
  it('follows q-values, the * wildcard and x-gzip', () => {
    expect([...acceptedCodings(undefined)]).toEqual(['identity']);
    expect(acceptedCodings('br').has('br')).toBe(true);
    expect(acceptedCodings('BR;Q=0.5').has('br')).toBe(true);
    expect(acceptedCodings('br;q=0').has('br')).toBe(false);
    expect(acceptedCodings('*').has('gzip')).toBe(true);
    expect(acceptedCodings('*, gzip;q=0').has('gzip')).toBe(false);
    expect(acceptedCodings('x-gzip').has('gzip')).toBe(true);
    expect(acceptedCodings('gzip;q=abc').has('gzip')).toBe(false);
  });
});
