/**
 * Requests that arrive while the models load: each is refused with 503 and Retry-After (a socket: before the
 * upgrade, or its error message and close 1013), and logged as one warn line, never at error with a stack.
 * A realtime session used to open and then fail with "Voice activity detection failed", and the speech socket
 * said its model "cannot speak text as it arrives". The models' start is held until the requests are done.
 */
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EngineRegistry } from '../../src/engines/engine-registry.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { REALTIME_MODELS } from '../helpers/realtime.js';
import { SpeechSocketClient } from './speech-socket-client.js';

let t: TestServer;
let engines: EngineRegistry;
let release: () => void;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-startup-requests-'));

beforeAll(async () => {
  const manifest = path.join(dir, 'manifest.json');
  fs.writeFileSync(manifest, JSON.stringify({ models: REALTIME_MODELS }));
  engines = EngineRegistry.fromManifest(manifest, 'djelia', { intraOpThreads: 1, interOpThreads: 1 });
  // The server starts the models itself; here their start waits until the test lets it go.
  const gate = new Promise<void>((resolve) => (release = resolve));
  const start = engines.start.bind(engines);
  engines.start = (logger) => gate.then(() => start(logger));
  t = await startTestServer({ engines });
}, 60_000);

afterAll(async () => {
  release?.();
  await t?.server.enginesReady.catch(() => undefined);
  await t?.close();
  await engines?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const auth = () => ({ authorization: `Bearer ${t.apiKey}` });

async function post(route: string, body: unknown): Promise<Response> {
  return fetch(`${t.baseUrl}/openai/v1${route}`, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

/** The HTTP status of a WebSocket upgrade that is refused, or 101. */
function upgradeStatus(route: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${t.baseUrl.replace('http', 'ws')}${route}`, { headers: auth() });
    ws.once('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      res.resume();
    });
    ws.once('open', () => {
      ws.close();
      resolve(101);
    });
    ws.once('error', reject);
  });
}

describe('requests while the models load', () => {
  it('get 503 with Retry-After, each logged as one warn line', async () => {
    expect((await fetch(`${t.baseUrl}/readyz`)).status).toBe(503);
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(44)], { type: 'audio/wav' }), 'a.wav');
    form.append('model', 'sunjata-1');
    const answers = [
      await post('/audio/speech', { model: 'jifili-1', input: 'i ni ce', voice: 'moussa', response_format: 'wav' }),
      await post('/chat/completions', {
        model: 'banjugu-1',
        messages: [{ role: 'user', content: 'i ni ce' }],
        djelia: { source_language: 'bam_Latn', target_language: 'fra_Latn' },
      }),
      await post('/chat/completions', {
        model: 'banjugu-1',
        stream: true,
        messages: [{ role: 'user', content: 'i ni ce' }],
        djelia: { source_language: 'bam_Latn', target_language: 'fra_Latn' },
      }),
    ];
    for (const answer of answers) {
      expect(answer.status).toBe(503);
      expect(answer.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(((await answer.json()) as { error: { message: string } }).error.message).toMatch(/still loading/);
    }
    expect(await upgradeStatus('/openai/v1/realtime?intent=transcription')).toBe(503);
    expect(await upgradeStatus('/openai/v1/realtime?intent=translation')).toBe(503);

    const socket = await SpeechSocketClient.open(t.baseUrl, '/openai/v1/audio/speech/stream?output_format=pcm', auth());
    const refusal = await socket.waitFor((json) => typeof json.message === 'string');
    expect(refusal.json.message).toMatch(/still loading/);
    expect((await socket.closed).code).toBe(1013);

    const lines = t.logs.map((line) => JSON.parse(line) as { level: number; msg: string; err?: unknown; code?: string });
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
    const refusals = lines.filter((l) => l.code === 'service_unavailable');
    expect(refusals.length).toBeGreaterThanOrEqual(5);
    for (const line of refusals) {
      expect(line.level).toBe(40);
      expect(typeof line.err).toBe('string');
      expect(String(line.err)).not.toMatch(/\n\s+at /);
    }
  }, 60_000);
});
