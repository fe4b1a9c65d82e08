/**
 * The retirement calendar (SPEC §9) on the wire, with one injected clock crossing the date: before it, every
 * native answer (whatever the method, with or without a key) and every answer for a legacy model id carries
 * `Deprecation`, `Sunset` and the successor `Link`; from the date on, every native route — both prefixes, every
 * method — answers 410 `endpoint_retired` naming its successor, and a legacy model id is a 404 naming its
 * replacement. A retired route never falls through to 404.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/test-server.js';
import { NATIVE_ROUTES } from '../../../src/api/native/native-paths.js';

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'] as const;
const PREFIXES = ['', '/api'];
const SUNSET = 'Sun, 20 Sep 2026 00:00:00 GMT';

let t: TestServer;
let now = new Date('2026-09-19T23:59:59.000Z');

beforeAll(async () => {
  t = await startTestServer({ clock: () => now, config: { retirementDate: '2026-09-20' } });
});
afterAll(async () => {
  await t?.close();
});

/** Every native path × prefix × method, asked with the native key header and an empty JSON body. */
async function askEveryNativeRoute(each: (res: Response, asked: string, successor: string) => Promise<void>): Promise<number> {
  let asked = 0;
  for (const route of NATIVE_ROUTES) {
    for (const prefix of PREFIXES) {
      for (const method of METHODS) {
        const hasBody = method !== 'GET' && method !== 'HEAD';
        const res = await fetch(`${t.baseUrl}${prefix}${route.path}`, {
          method,
          headers: { 'x-api-key': t.apiKey, ...(hasBody ? { 'content-type': 'application/json' } : {}) },
          ...(hasBody ? { body: '{}' } : {}),
        });
        await each(res, `${method} ${prefix}${route.path}`, route.successor);
        asked++;
      }
    }
  }
  return asked;
}

describe('the native surface and the legacy ids across the retirement date', () => {
  it('are deprecated the second before, and gone from the first second of the date', async () => {
    now = new Date('2026-09-19T23:59:59.000Z');
    const before = await askEveryNativeRoute(async (res, asked, successor) => {
      await res.arrayBuffer();
      expect(res.status, asked).not.toBe(410);
      expect(res.status, asked).not.toBe(404);
      expect(res.headers.get('deprecation'), asked).toMatch(/^@\d+$/);
      expect(res.headers.get('sunset'), asked).toBe(SUNSET);
      expect(res.headers.get('link'), asked).toBe(`<${successor}>; rel="successor-version"`);
    });
    expect(before).toBe(NATIVE_ROUTES.length * PREFIXES.length * METHODS.length);

    const legacy = await fetch(`${t.baseUrl}/compat/v1/models/djelia-tts-v1`, { headers: { authorization: `Bearer ${t.apiKey}` } });
    expect(legacy.status).toBe(200);
    expect(legacy.headers.get('sunset')).toBe(SUNSET);
    expect(legacy.headers.get('link')).toBe('</compat/v1/models/jifili-1>; rel="successor-version"');
    // Every primary-surface answer for a legacy id carries them (this server loads no models: 503s, still marked).
    const bearerJson = { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' };
    const speech = await fetch(`${t.baseUrl}/openai/v1/audio/speech`, {
      method: 'POST',
      headers: bearerJson,
      body: JSON.stringify({ model: 'djelia-tts-v2', input: 'i ni ce', voice: 'seydou' }),
    });
    const chat = await fetch(`${t.baseUrl}/compat/v1/chat/completions`, {
      method: 'POST',
      headers: bearerJson,
      body: JSON.stringify({
        model: 'djelia-translate-v2',
        messages: [{ role: 'user', content: 'i ni ce' }],
        djelia: { source_language: 'bam_Latn', target_language: 'fra_Latn' },
      }),
    });
    const form = new FormData();
    form.append('model', 'djelia-asr-v1');
    form.append('file', new Blob([new Uint8Array(44)]), 'a.wav');
    const transcription = await fetch(`${t.baseUrl}/compat/v1/audio/transcriptions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.apiKey}` },
      body: form,
    });
    // The successor is under the prefix the client uses: an SDK's base URL keeps working for it.
    for (const [res, successor] of [
      [speech, '/openai/v1/models/jifili-1'],
      [chat, '/compat/v1/models/banjugu-1'],
      [transcription, '/compat/v1/models/sunjata-1'],
    ] as const) {
      await res.arrayBuffer();
      expect(res.headers.get('deprecation')).toMatch(/^@\d+$/);
      expect(res.headers.get('sunset')).toBe(SUNSET);
      expect(res.headers.get('link')).toBe(`<${successor}>; rel="successor-version"`);
    }
    const current = await fetch(`${t.baseUrl}/compat/v1/models/jifili-1`, { headers: { authorization: `Bearer ${t.apiKey}` } });
    expect(current.status).toBe(200);
    expect(current.headers.get('deprecation')).toBeNull();

    now = new Date('2026-09-20T00:00:00.000Z');
    await askEveryNativeRoute(async (res, asked, successor) => {
      expect(res.status, asked).toBe(410);
      expect(res.headers.get('link'), asked).toBe(`<${successor}>; rel="successor-version"`);
      expect(res.headers.get('sunset'), asked).toBe(SUNSET);
      if (asked.startsWith('HEAD')) return;
      const body = (await res.json()) as { error: { code: string; message: string }; detail: string };
      expect(body.error.code, asked).toBe('endpoint_retired');
      expect(body.detail, asked).toBe(body.error.message);
      // The message names the route asked and the primary route to use instead.
      expect(body.error.message, asked).toContain(asked.split(' ')[1]);
      expect(body.error.message, asked).toContain(successor);
    });

    const gone = await fetch(`${t.baseUrl}/openai/v1/models/djelia-asr-v2`, { headers: { authorization: `Bearer ${t.apiKey}` } });
    expect(gone.status).toBe(404);
    expect(((await gone.json()) as { error: { code: string } }).error.code).toBe('model_not_found');
    expect(gone.headers.get('link')).toBe('</openai/v1/models/sunjata-1>; rel="successor-version"');
    const goneCompat = await fetch(`${t.baseUrl}/compat/v1/models/djelia-asr-v2`, { headers: { authorization: `Bearer ${t.apiKey}` } });
    await goneCompat.arrayBuffer();
    expect(goneCompat.headers.get('link')).toBe('</compat/v1/models/sunjata-1>; rel="successor-version"');
  }, 60_000);

  it('answers 410 without a key, with a Bearer key, and with a wrong key alike: a retired route is gone for everyone', async () => {
    now = new Date('2027-01-01T00:00:00.000Z');
    const asked: Record<string, string>[] = [{}, { authorization: `Bearer ${t.apiKey}` }, { 'x-api-key': '00000000-0000-4000-8000-000000000000' }];
    for (const headers of asked) {
      const res = await fetch(`${t.baseUrl}/api/v2/models/tts`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: '{}' });
      expect(res.status).toBe(410);
      await res.arrayBuffer();
    }
    // Operators see who still calls the native surface, served or refused.
    const metrics = await (await fetch(`${t.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/kuma_native_requests_total\{route="\/v2\/models\/tts",outcome="retired"\} ([3-9]|\d\d+)/);
    expect(metrics).toMatch(/kuma_native_requests_total\{route="\/v2\/models\/tts",outcome="served"\} \d+/);
  });

  it('names, for each retired route, the primary route of the same operation, which serves that method', async () => {
    now = new Date('2027-01-01T00:00:00.000Z');
    const successors = new Set<string>();
    for (const route of NATIVE_ROUTES) {
      const gone = await fetch(`${t.baseUrl}/api${route.path}`, { method: route.method, headers: { 'x-api-key': t.apiKey } });
      await gone.arrayBuffer();
      const successor = /^<([^>]+)>; rel="successor-version"$/.exec(gone.headers.get('link') ?? '')?.[1];
      expect(successor, route.path).toMatch(/^\/compat\/v1\/(models\/banjugu-1|chat\/completions|audio\/transcriptions|audio\/speech)$/);
      successors.add(successor!);
      // The successor is served with the same method: no 404, no 405 (a body-less call gets its own 4xx).
      const asked = await fetch(`${t.baseUrl}${successor}`, { method: route.method, headers: { authorization: `Bearer ${t.apiKey}` } });
      await asked.arrayBuffer();
      expect([404, 405, 410], `${route.method} ${successor}`).not.toContain(asked.status);
    }
    expect(successors.size).toBe(4); // languages, translation, transcription and speech each have their own
  });

  it('leaves paths that were never native routes as 404', async () => {
    now = new Date('2027-01-01T00:00:00.000Z');
    const res = await fetch(`${t.baseUrl}/api/v1/models/nothing-here`, { headers: { 'x-api-key': t.apiKey } });
    expect(res.status).toBe(404);
    await res.arrayBuffer();
  });
});

describe('an operator who needs more time', () => {
  it('moves KUMA_RETIREMENT_DATE into the future: with the real clock the native routes serve, with that Sunset', async () => {
    const later = await startTestServer({ config: { retirementDate: '2099-03-31' } });
    try {
      const res = await fetch(`${later.baseUrl}/api/v1/models/translate/supported-languages`, { headers: { 'x-api-key': later.apiKey } });
      expect(res.status).toBe(200);
      expect(res.headers.get('sunset')).toBe('Tue, 31 Mar 2099 00:00:00 GMT');
      expect(((await res.json()) as Array<{ code: string }>).map((l) => l.code)).toEqual(['bam_Latn', 'fra_Latn', 'eng_Latn']);
    } finally {
      await later.close();
    }
  });
});
