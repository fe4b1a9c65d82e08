/**
 * Overload is decided before the upload is read (P6 item 7): when every engine that could transcribe is
 * busy and its queue full, POST /audio/transcriptions and /audio/translations answer 503 with Retry-After
 * and the envelope without parsing the upload at all — the transport drops the body (bounded) and answers.
 * Shown with a body that is not even valid multipart: parsed, it would be a 400; it is a 503.
 */
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { EngineRegistry } from '../../src/engines/engine-registry.js';
import { ModelEngine } from '../../src/engines/runtime/model-engine.js';
import { wavBytes } from '../helpers/audio.js';

const fixtures = path.resolve('test/fixtures/engines');
let t: TestServer;
let engine: ModelEngine;

beforeAll(async () => {
  // The only speech-to-text model, one replica running one job at a time, no queue.
  engine = new ModelEngine(
    { id: 'sunjata-1', aliases: [], engine: 'custom', dir: fixtures, absoluteDir: fixtures, replicas: 1, maxQueue: 0, options: { module: 'busy-runner.ts' } },
    { intraOpThreads: 1, interOpThreads: 1 },
  );
  t = await startTestServer({ engines: new EngineRegistry([engine]) });
  await t.server.enginesReady;
}, 60_000);
afterAll(async () => {
  await t.close();
  await engine.close();
});

/** Sends a multipart upload whose body never closes its part (malformed); resolves with the response head and body. */
function malformedUpload(route: string, bodyBytes: number): Promise<string> {
  const boundary = 'kuma-boundary';
  const start = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="long.wav"\r\nContent-Type: audio/wav\r\n\r\nRIFF`);
  const body = Buffer.concat([start, Buffer.alloc(bodyBytes - start.length)]); // no closing boundary
  const head = [
    `POST /openai/v1/audio/${route} HTTP/1.1`,
    `Host: 127.0.0.1`,
    `Authorization: Bearer ${t.apiKey}`,
    `Content-Type: multipart/form-data; boundary=${boundary}`,
    `Content-Length: ${body.length}`,
    'Connection: close',
    '',
    '',
  ].join('\r\n');
  return new Promise((resolve, reject) => {
    const socket = net.connect(t.server.port, '127.0.0.1', () => socket.end(Buffer.concat([Buffer.from(head), body])));
    let received = '';
    socket.on('data', (d) => (received += d.toString('latin1')));
    socket.on('end', () => resolve(received));
    socket.on('error', reject);
  });
}

it('answers 503 with Retry-After before the body when every speech-to-text engine is saturated', async () => {
  const busy = engine.run('spin', { steps: 300, stepMs: 10 }); // holds the only replica for ≈ 3 s
  try {
    expect(engine.refusal()).not.toBeNull();
    for (const route of ['transcriptions', 'translations']) {
      const answer = await malformedUpload(route, 2_000_000);
      expect(answer).toMatch(/^HTTP\/1\.1 503/);
      expect(answer.toLowerCase()).toMatch(/\r\nretry-after: \d+\r\n/);
      expect(answer).toContain('"code":"service_unavailable"');
      expect(answer).toContain('speech-to-text models are at capacity');
    }
    // A Node client that sends a whole (3 MB) upload sees the status and the envelope.
    const form = new FormData();
    form.append('file', new Blob([wavBytes(new Float32Array(16000 * 90), 16000)]), 'long.wav');
    const res = await fetch(`${t.baseUrl}/openai/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${t.apiKey}` }, body: form });
    expect(res.status).toBe(503);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await res.json()).toEqual({ error: { message: expect.stringMatching(/capacity/), type: 'api_error', param: null, code: 'service_unavailable' } });
  } finally {
    await busy;
  }
});
