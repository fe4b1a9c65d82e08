/**
 * The multi-context speech socket (ElevenLabs multi-stream-input) with the demo models, through a real server
 * and a `ws` client: contexts interleaved on one socket are each their own stream (their audio, tagged
 * `contextId`, transcribes to their own text, and each ends with its own isFinal); close_context speaks what
 * was flushed and drops what was not; keep-alive, the per-context and socket inactivity; the context cap;
 * errors name their context; close_socket ends the socket once its contexts have spoken; the bill is the
 * characters spoken.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { decodeSpeech, transcribeWith } from '../helpers/speech-audio.js';
import { SpeechSocketClient } from './speech-socket-client.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ clock: () => new Date('2026-09-01T00:00:00Z'), config: { modelsManifest: 'models/kuma-models.json', demoPack: false } });
  await t.server.enginesReady;
}, 120_000);
afterAll(() => t.close());

const PATH = '/openai/v1/text-to-speech/moussa/multi-stream-input?output_format=pcm_16000';
const connect = (query = '', apiKey = t.apiKey) => SpeechSocketClient.open(t.baseUrl, PATH + query, { 'xi-api-key': apiKey });
const words = (s: string) =>
  s
    .replace(/[.?,!]/g, '')
    .trim()
    .split(/\s+/)
    .join(' ');

async function heard(client: SpeechSocketClient, contextId: string): Promise<string> {
  const { samples, rate } = await decodeSpeech('pcm_16000', client.audio(contextId));
  return transcribeWith(t.server.engines!, samples, rate);
}

const charged = async (accountId: string) => (await t.server.store.listUsage({ accountId })).reduce((sum, r) => sum + r.quantity, 0);
const finalOf = (client: SpeechSocketClient, id: string) => client.waitFor((m) => m.isFinal === true && m.contextId === id, `isFinal of ${id}`);

describe('multi-context speech socket', () => {
  it('two contexts interleaved: each one’s audio is its own text, each ends with its isFinal; the socket stays open until close_socket', async () => {
    const account = await t.newAccount(10_000_000);
    const client = await connect('', account.apiKey);
    const texts = { a: 'i ni ce. a ka kɛnɛ wa?', b: 'tɔgɔ ye musa ye.' };
    client.send({ text: ' ', context_id: 'a', voice_settings: { stability: 0.5 } });
    client.send({ text: ' ', context_id: 'b' });
    client.send({ text: 'i ni ce. ', context_id: 'a' });
    client.send({ text: 'tɔgɔ ye ', context_id: 'b' });
    client.send({ text: 'a ka kɛnɛ wa? ', context_id: 'a', flush: true });
    client.send({ text: 'musa ye.', context_id: 'b', flush: true });
    client.send({ text: '', context_id: 'a', flush: true }); // LiveKit's end of a context: an empty flush, then close_context
    client.send({ context_id: 'a', close_context: true });
    client.send({ context_id: 'b', close_context: true });
    const finals = await Promise.all([finalOf(client, 'a'), finalOf(client, 'b')]);
    for (const [id, final] of [
      ['a', finals[0]],
      ['b', finals[1]],
    ] as const) {
      // Nothing of a context comes after its isFinal.
      const after = client.received.slice(client.received.indexOf(final) + 1).filter((r) => r.json.contextId === id);
      expect(after).toEqual([]);
      expect(await heard(client, id)).toBe(words(texts[id]));
    }
    expect(client.audioMessages.every((m) => m.contextId === 'a' || m.contextId === 'b')).toBe(true);
    expect(client.errors).toEqual([]);
    expect(client.ws.readyState).toBe(client.ws.OPEN);
    client.send({ close_socket: true });
    expect((await client.closed).code).toBe(1000);
    // The characters as sent (a flushed piece's trailing space included), as on the single-stream socket.
    expect(await charged(account.accountId)).toBe([...'i ni ce. a ka kɛnɛ wa? '].length + [...'tɔgɔ ye musa ye.'].length);
  });

  it('close_context speaks what was flushed and drops what never was, uncharged', async () => {
    const account = await t.newAccount(10_000_000);
    const client = await connect('', account.apiKey);
    client.send({ text: 'i ni ce. ', context_id: 'c', flush: true });
    client.send({ text: 'a ka kɛnɛ', context_id: 'c' }); // no sentence end, no flush: still waiting for more
    client.send({ context_id: 'c', close_context: true });
    await finalOf(client, 'c');
    expect(await heard(client, 'c')).toBe('i ni ce');
    client.send({ close_socket: true });
    await client.closed;
    expect(await charged(account.accountId)).toBe([...'i ni ce. '].length);
  });

  it('messages without context_id go to the default context', async () => {
    const client = await connect();
    client.send({ text: 'i ni ce. ', flush: true });
    client.send({ close_context: true });
    await finalOf(client, 'default');
    expect(await heard(client, 'default')).toBe('i ni ce');
    client.send({ close_socket: true });
    expect((await client.closed).code).toBe(1000);
  });

  it('at most 5 contexts at once: a sixth is refused (max_active_conversations), and opens once one has closed', async () => {
    const client = await connect();
    for (let i = 1; i <= 6; i++) client.send({ text: ' ', context_id: `c${i}` });
    const refused = await client.waitFor((m) => m.error === 'max_active_conversations', 'the refusal');
    expect([refused.json.contextId, refused.json.code, refused.json.param]).toEqual(['c6', null, 'context_id']);
    client.send({ context_id: 'c1', close_context: true });
    await finalOf(client, 'c1');
    client.send({ text: 'i ni ce. ', context_id: 'c6', flush: true });
    client.send({ close_socket: true });
    await finalOf(client, 'c6');
    expect((await client.closed).code).toBe(1000);
    expect(await heard(client, 'c6')).toBe('i ni ce');
    expect(client.errors.map((e) => e.error)).toEqual(['max_active_conversations']);
  });

  it('a bad message gets an error naming its context, and the socket and the context go on', async () => {
    const client = await connect();
    client.send({ text: 'i ni ce 😀 ', context_id: 'x' });
    client.send({ text: 42, context_id: 'x' });
    client.send({ context_id: 'nobody', close_context: true });
    client.send({ text: 'i ni ce. ', context_id: 'x', flush: true });
    client.send({ context_id: 'x', close_context: true });
    client.send({ text: 'a ka ', context_id: 'x' }); // closing: refused until its isFinal
    await finalOf(client, 'x');
    expect(client.errors.map((e) => [e.error, e.param, e.contextId ?? null, e.code])).toEqual([
      ['invalid_value', 'text', 'x', null],
      ['invalid_value', 'text', null, null],
      ['invalid_value', 'context_id', 'nobody', null],
      ['invalid_request', 'context_id', 'x', null],
    ]);
    expect(await heard(client, 'x')).toBe('i ni ce');
    client.send({ close_socket: true });
    expect((await client.closed).code).toBe(1000);
  });

  it('an idle context is closed (input_timeout_exceeded, then its isFinal); a socket with no context is closed 1008', async () => {
    const client = await connect('&inactivity_timeout=1');
    client.send({ text: 'i ni ce. ', context_id: 'idle', flush: true });
    await finalOf(client, 'idle');
    const timeout = client.errors.find((e) => e.contextId === 'idle')!;
    expect([timeout.error, timeout.code]).toEqual(['input_timeout_exceeded', null]);
    expect(await heard(client, 'idle')).toBe('i ni ce');
    expect((await client.closed).code).toBe(1008);
    expect(client.errors.at(-1)).toMatchObject({ error: 'input_timeout_exceeded', code: 1008 });
  });

  it('an empty text keeps a context alive: it is not input and ends nothing', async () => {
    const client = await connect();
    client.send({ text: 'i ni ce. ', context_id: 'k' });
    client.send({ text: '', context_id: 'k' });
    client.send({ text: 'a ka kɛnɛ wa? ', context_id: 'k', flush: true });
    await client.waitFor((m) => m.contextId === 'k' && m.alignment?.chars.join('').includes('kɛnɛ'), 'the second sentence');
    expect(client.received.some((r) => r.json.isFinal)).toBe(false);
    client.send({ close_socket: true });
    await finalOf(client, 'k');
    expect(await heard(client, 'k')).toBe('i ni ce a ka kɛnɛ wa');
    expect((await client.closed).code).toBe(1000);
  });
});
