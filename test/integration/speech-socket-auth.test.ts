/**
 * Browser-safe credentials on the speech sockets (stream-input and multi-stream-input): an `ek_` client secret
 * (used once), the key as `?xi-api-key=`, and the key as `xi_api_key` in the first message of an upgrade that
 * carries none — ElevenLabs' ways. A socket waiting for its first message is unauthenticated: it counts under
 * the pre-auth caps (429 at the upgrade when its address has too many) until its credential checks out, and
 * is refused on the socket (error, close 1008) when the message carries none, a bad one, or one whose balance
 * is empty.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { decodeSpeech, transcribeWith } from '../helpers/speech-audio.js';
import { closed, connect, wsUrl } from '../helpers/websocket-client.js';
import { SpeechSocketClient } from './speech-socket-client.js';

const PER_ADDRESS = 2;
let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({
    clock: () => new Date('2026-09-01T00:00:00Z'),
    config: { modelsManifest: 'models/kuma-models.json', demoPack: false, wsPreAuthMaxPerAddress: PER_ADDRESS },
  });
  await t.server.enginesReady;
}, 120_000);
afterAll(() => t.close());

const SINGLE = '/openai/v1/text-to-speech/moussa/stream-input?output_format=pcm_16000';
const MULTI = '/openai/v1/text-to-speech/moussa/multi-stream-input?output_format=pcm_16000';

async function mintSecret(): Promise<string> {
  const res = await fetch(`${t.baseUrl}/openai/v1/realtime/client_secrets`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
    body: '{}',
  });
  return ((await res.json()) as { value: string }).value;
}

async function heard(client: SpeechSocketClient, contextId?: string): Promise<string> {
  const { samples, rate } = await decodeSpeech('pcm_16000', client.audio(contextId));
  return transcribeWith(t.server.engines!, samples, rate);
}

/** Speaks "i ni ce" on a socket already open, the way each path ends its input. */
async function speak(client: SpeechSocketClient, path: string): Promise<string> {
  if (path === MULTI) {
    client.send({ text: 'i ni ce. ', context_id: 'a', flush: true });
    client.send({ close_socket: true });
  } else {
    client.send({ text: 'i ni ce. ' });
    client.send({ text: '' });
  }
  expect((await client.closed).code).toBe(1000);
  return heard(client, path === MULTI ? 'a' : undefined);
}

describe.each([
  ['stream-input', SINGLE],
  ['multi-stream-input', MULTI],
])('%s', (_name, path) => {
  it('takes the key as ?xi-api-key=', async () => {
    const client = await SpeechSocketClient.open(t.baseUrl, `${path}&xi-api-key=${t.apiKey}`, {});
    expect(await speak(client, path)).toBe('i ni ce');
  });

  it('takes the key as xi_api_key in the first message of an upgrade that carries none', async () => {
    const client = await SpeechSocketClient.open(t.baseUrl, path, {});
    client.send({ text: ' ', xi_api_key: t.apiKey, ...(path === MULTI ? { context_id: 'a' } : {}) });
    expect(await speak(client, path)).toBe('i ni ce');
    expect(client.errors).toEqual([]);
  });

  it('takes an ek_ client secret (in the query, or in the first message), once', async () => {
    const inQuery = await mintSecret();
    expect(await speak(await SpeechSocketClient.open(t.baseUrl, `${path}&xi-api-key=${inQuery}`, {}), path)).toBe('i ni ce');
    expect(await connect(wsUrl(t.baseUrl, `${path}&xi-api-key=${inQuery}`))).toMatchObject({ kind: 'refused', status: 401 });

    const inMessage = await mintSecret();
    const client = await SpeechSocketClient.open(t.baseUrl, path, {});
    client.send({ text: ' ', xi_api_key: inMessage });
    expect(await speak(client, path)).toBe('i ni ce');
    const again = await SpeechSocketClient.open(t.baseUrl, path, {});
    again.send({ text: ' ', xi_api_key: inMessage });
    expect((await again.closed).code).toBe(1008);
    expect(again.errors.map((e) => [e.error, e.code])).toEqual([['invalid_api_key', 1008]]);
  });

  it.each([
    ['no credential', { text: ' ' }, 'invalid_api_key'],
    ['a wrong key', { text: ' ', xi_api_key: 'sk-kuma-not-a-key' }, 'invalid_api_key'],
    ['not JSON', 'hello', 'invalid_api_key'],
  ])('a first message with %s: an error, then close 1008', async (_what, first, code) => {
    const client = await SpeechSocketClient.open(t.baseUrl, path, {});
    client.send(first);
    expect((await client.closed).code).toBe(1008);
    expect(client.errors.map((e) => [e.error, e.code])).toEqual([[code, 1008]]);
  });

  it('a key whose balance is empty is refused on the socket (insufficient_quota)', async () => {
    const broke = await t.newAccount(0);
    const client = await SpeechSocketClient.open(t.baseUrl, path, {});
    client.send({ text: ' ', xi_api_key: broke.apiKey });
    expect((await client.closed).code).toBe(1008);
    expect(client.errors.map((e) => [e.error, e.code])).toEqual([['insufficient_quota', 1008]]);
  });
});

describe('sockets waiting for their first message', () => {
  it(`count under the pre-auth caps (${PER_ADDRESS} per address) until authenticated; sockets with a key at the upgrade do not`, async () => {
    const waiting = await Promise.all(Array.from({ length: PER_ADDRESS }, () => SpeechSocketClient.open(t.baseUrl, SINGLE, {})));
    expect(await connect(wsUrl(t.baseUrl, SINGLE))).toMatchObject({ kind: 'refused', status: 429 });
    // A key with the upgrade is not pre-auth.
    const keyed = await SpeechSocketClient.open(t.baseUrl, SINGLE, { 'xi-api-key': t.apiKey });
    // Once one of the waiting sockets is authenticated, its place is free again.
    waiting[0]!.send({ text: 'i ni ce. ', xi_api_key: t.apiKey });
    waiting[0]!.send({ text: '' });
    await waiting[0]!.waitFor((m) => m.isFinal === true, 'isFinal');
    const next = new WebSocket(wsUrl(t.baseUrl, SINGLE));
    await new Promise(
      (resolve, reject) => (next.once('open', resolve), next.once('unexpected-response', (_r, res) => reject(new Error(`refused ${res.statusCode}`)))),
    );
    next.close();
    await closed(next);
    for (const client of [...waiting, keyed]) client.ws.close();
    await Promise.all([...waiting, keyed].map((c) => c.closed));
    expect(await heard(waiting[0]!)).toBe('i ni ce');
  });

  it('a plain HTTP request without a key is still 401', async () => {
    expect((await fetch(`${t.baseUrl}${MULTI}`)).status).toBe(401);
  });
});
