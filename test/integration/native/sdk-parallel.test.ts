/**
 * The Djelia JS SDK README's "Parallel Operations" and "Error Handling" sections, replayed with the SDK's own
 * HTTP stack (axios + form-data): a translation, a transcription and a speech request at once through one key
 * all succeed with their shapes; a bad key is a 401 whose `detail` the SDK's error classes read; once the
 * date has passed, the same calls are 410s naming their successors.
 */
import axios, { type AxiosError } from 'axios';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/test-server.js';
import { spokenPhrases, wavBytes } from '../../helpers/audio.js';
import { jsSdkTranscribe } from './transcribe-clients.js';

let t: TestServer;
let now = new Date('2026-09-01T00:00:00Z');
const wav = Buffer.from(wavBytes(spokenPhrases(['i ni ce']).samples, 16000));

beforeAll(async () => {
  t = await startTestServer({ clock: () => now, config: { modelsManifest: 'models/kuma-models.json', demoPack: false } });
  await t.server.enginesReady;
}, 120_000);
afterAll(() => t.close());

function calls(apiKey: string) {
  const client = axios.create({ timeout: 30_000, headers: { 'x-api-key': apiKey, 'Content-Type': 'application/json' } });
  return [
    client.post(`${t.baseUrl}/api/v1/models/translate`, { text: 'i ni ce', source: 'bam_Latn', target: 'fra_Latn' }),
    jsSdkTranscribe({ baseUrl: t.baseUrl, apiKey, version: 2 }, wav),
    client.post(
      `${t.baseUrl}/api/v2/models/tts`,
      { text: 'i ni ce', description: 'Moussa speaks with a clear tone', chunk_size: 1.0 },
      { responseType: 'arraybuffer' },
    ),
  ];
}

it('Promise.allSettled of translate, transcribe and textToSpeech: all fulfilled, each in its shape', async () => {
  const settled: PromiseSettledResult<any>[] = await Promise.allSettled(calls(t.apiKey));
  const [translation, transcription, speech] = [settled[0]!, settled[1]!, settled[2]!];
  expect([translation.status, transcription.status, speech.status]).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
  const value = (r: PromiseSettledResult<any>) => (r as PromiseFulfilledResult<any>).value;
  expect(Object.keys(value(translation).data)).toEqual(['text']);
  expect(value(transcription).data.map((s: { text: string }) => s.text)).toEqual(['i ni ce']);
  expect(value(speech).headers['content-type']).toBe('audio/mpeg');
  expect(Buffer.from(value(speech).data).length).toBeGreaterThan(1000);
}, 60_000);

it('a key the server does not know: every call a 401 with a detail message (the SDK raises AuthenticationError)', async () => {
  const results = await Promise.allSettled(calls('00000000-0000-4000-8000-000000000000'));
  for (const result of results) {
    expect(result.status).toBe('rejected');
    const response = ((result as PromiseRejectedResult).reason as AxiosError).response!;
    expect(response.status).toBe(401);
    const body =
      response.data instanceof ArrayBuffer || Buffer.isBuffer(response.data) ? JSON.parse(Buffer.from(response.data as ArrayBuffer).toString()) : response.data;
    expect(typeof body.detail).toBe('string');
  }
});

it('after the retirement date the same calls are 410 endpoint_retired with the successor link', async () => {
  now = new Date('2026-09-20T00:00:00Z');
  const results = await Promise.allSettled(calls(t.apiKey));
  const successors = ['/compat/v1/chat/completions', '/compat/v1/audio/transcriptions', '/compat/v1/audio/speech'];
  results.forEach((result, i) => {
    const response = ((result as PromiseRejectedResult).reason as AxiosError).response!;
    expect(response.status).toBe(410);
    expect(response.headers['link']).toBe(`<${successors[i]}>; rel="successor-version"`);
  });
});
