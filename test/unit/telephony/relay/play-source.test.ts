/**
 * `play` source fetching against a real HTTP server on an ephemeral port (test/helpers/relay-app.ts).
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { PlaySourceError } from '../../../../src/telephony/relay/relay-errors.js';
import { fetchPlaySource } from '../../../../src/telephony/relay/play-source.js';
import { startStaticServer, type StaticRoute, type StaticServer } from '../../../helpers/relay-app.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function serve(routes: Record<string, StaticRoute>): Promise<StaticServer> {
  const server = await startStaticServer(routes);
  cleanups.push(() => server.close());
  return server;
}

const allowAll = async () => {};
const wav = new Uint8Array(4000).map((_, i) => i % 251);

async function failure(promise: Promise<unknown>): Promise<PlaySourceError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(PlaySourceError);
  return error as PlaySourceError;
}

describe('fetchPlaySource', () => {
  it('returns the bytes and content type', async () => {
    const server = await serve({ '/welcome.wav': { body: wav, contentType: 'audio/wav' } });
    const source = await fetchPlaySource(`${server.baseUrl}/welcome.wav`, { checkUrl: allowAll });
    expect(Buffer.from(source.bytes).equals(Buffer.from(wav))).toBe(true);
    expect(source.contentType).toBe('audio/wav');
    expect(source.url).toBe(`${server.baseUrl}/welcome.wav`);
  });

  it('follows up to 3 redirects (relative and absolute), checking every hop before requesting it', async () => {
    // The last hop goes to another host (another port): the check must see it too.
    const server = await serve({ '/final.wav': { body: wav } });
    const server2 = await serve({
      '/a': { redirect: '/b' },
      '/b': { redirect: 'c', status: 301 },
      '/c': { redirect: `${server.baseUrl}/final.wav`, status: 307 },
    });
    const checked: string[] = [];
    const source = await fetchPlaySource(`${server2.baseUrl}/a`, { checkUrl: (url) => void checked.push(url.href) });
    expect(source.bytes.byteLength).toBe(wav.byteLength);
    expect(source.url).toBe(`${server.baseUrl}/final.wav`);
    expect(checked).toEqual([`${server2.baseUrl}/a`, `${server2.baseUrl}/b`, `${server2.baseUrl}/c`, `${server.baseUrl}/final.wav`]);
    expect(server2.requests).toEqual(['/a', '/b', '/c']);
    expect(server.requests).toEqual(['/final.wav']);
  });

  it('a fourth redirect is refused, and its target never requested', async () => {
    const server = await serve({ '/1': { redirect: '/2' }, '/2': { redirect: '/3' }, '/3': { redirect: '/4' }, '/4': { redirect: '/5' }, '/5': { body: wav } });
    const error = await failure(fetchPlaySource(`${server.baseUrl}/1`, { checkUrl: allowAll }));
    expect(error.code).toBe('too_many_redirects');
    expect(server.requests).toEqual(['/1', '/2', '/3', '/4']);
  });

  it('a redirect to a host the allow-list refuses: not_allowed, and that host is never asked', async () => {
    const inside = await serve({ '/secret.wav': { body: wav } });
    const outside = await serve({ '/play': { redirect: `${inside.baseUrl}/secret.wav` } });
    const insidePort = new URL(inside.baseUrl).port;
    const error = await failure(
      fetchPlaySource(`${outside.baseUrl}/play`, {
        checkUrl: (url) => {
          if (url.port === insidePort) throw new Error('private address');
        },
      }),
    );
    expect(error.code).toBe('not_allowed');
    expect(error.message).toContain('private address');
    expect(inside.requests).toEqual([]);
  });

  it('a refused source URL: no request at all', async () => {
    const server = await serve({ '/x.wav': { body: wav } });
    const error = await failure(fetchPlaySource(`${server.baseUrl}/x.wav`, { checkUrl: () => Promise.reject(new Error('not on the allow-list')) }));
    expect(error.code).toBe('not_allowed');
    expect(server.requests).toEqual([]);
  });

  it.each(['file:///etc/passwd', 'ftp://example.com/a.wav', 'not a url'])('refuses %s as invalid_url without checking it', async (source) => {
    let checked = false;
    const error = await failure(fetchPlaySource(source, { checkUrl: () => void (checked = true) }));
    expect(error.code).toBe('invalid_url');
    expect(checked).toBe(false);
  });

  it('a redirect to a non-http scheme is invalid_url', async () => {
    const server = await serve({ '/a': { redirect: 'file:///etc/passwd' } });
    expect((await failure(fetchPlaySource(`${server.baseUrl}/a`, { checkUrl: allowAll }))).code).toBe('invalid_url');
  });

  it('caps the size: a declared Content-Length over the cap, and an endless body without one, are both cut off', async () => {
    const server = await serve({
      '/big.wav': { body: new Uint8Array(5000) },
      '/endless.wav': { endless: new Uint8Array(1024) },
      '/exact.wav': { body: wav, omitLength: true },
    });
    expect((await failure(fetchPlaySource(`${server.baseUrl}/big.wav`, { checkUrl: allowAll, maxBytes: 4999 }))).code).toBe('too_large');
    const endless = await failure(fetchPlaySource(`${server.baseUrl}/endless.wav`, { checkUrl: allowAll, maxBytes: 64 * 1024 }));
    expect(endless).toMatchObject({ code: 'too_large', message: 'the play source is larger than 65536 bytes' });
    while (server.abandoned() < 1) await new Promise((resolve) => setTimeout(resolve, 5));
    // Exactly at the cap is accepted.
    expect((await fetchPlaySource(`${server.baseUrl}/exact.wav`, { checkUrl: allowAll, maxBytes: wav.byteLength })).bytes.byteLength).toBe(wav.byteLength);
  });

  it('property: any cap either returns the whole body (size ≤ cap) or too_large (size > cap)', async () => {
    const server = await serve({ '/x.wav': { body: wav, omitLength: true } });
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 2 * wav.byteLength }), async (maxBytes) => {
        const result = await fetchPlaySource(`${server.baseUrl}/x.wav`, { checkUrl: allowAll, maxBytes }).catch((e: PlaySourceError) => e);
        if (maxBytes >= wav.byteLength) expect((result as { bytes: Uint8Array }).bytes.byteLength).toBe(wav.byteLength);
        else expect(result).toMatchObject({ code: 'too_large' });
      }),
      { numRuns: 25 },
    );
  });

  it('caps the time: a server that never answers, and one that stalls after the head', async () => {
    const server = await serve({ '/silent': { hang: 'before-head' }, '/stalled': { hang: 'after-head' } });
    expect(await failure(fetchPlaySource(`${server.baseUrl}/silent`, { checkUrl: allowAll, timeoutMs: 150 }))).toMatchObject({
      code: 'timeout',
      message: 'the play source did not arrive within 150 ms',
    });
    expect((await failure(fetchPlaySource(`${server.baseUrl}/stalled`, { checkUrl: allowAll, timeoutMs: 150 }))).code).toBe('timeout');
  });

  it('the call ending mid-fetch: aborted, not a timeout', async () => {
    const server = await serve({ '/silent': { hang: 'before-head' } });
    const controller = new AbortController();
    const pending = fetchPlaySource(`${server.baseUrl}/silent`, { checkUrl: allowAll, signal: controller.signal, timeoutMs: 60_000 });
    while (server.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    controller.abort();
    expect((await failure(pending)).code).toBe('aborted');
  });

  it('an error status is http_status with the status; a refused connection is fetch_failed', async () => {
    const server = await serve({});
    const notFound = await failure(fetchPlaySource(`${server.baseUrl}/missing.wav`, { checkUrl: allowAll }));
    expect(notFound).toMatchObject({ code: 'http_status', status: 404, message: 'the play source answered HTTP 404' });
    const port = new URL(server.baseUrl).port;
    await server.close();
    cleanups.pop();
    const refused = await failure(fetchPlaySource(`http://127.0.0.1:${port}/x.wav`, { checkUrl: allowAll }));
    expect(refused.code).toBe('fetch_failed');
    expect(refused.message).toContain('ECONNREFUSED');
  });
});
