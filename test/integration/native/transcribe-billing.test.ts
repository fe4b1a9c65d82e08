/**
 * What the native transcribe routes charge and when their NDJSON leaves: the ledger rows and balance change
 * of a native call equal those of the equivalent primary call on the same audio (SPEC §9: v1/v2 are
 * djelia-asr-v1/v2, translate_to_french=true is /audio/translations with language fra_Latn); NDJSON objects
 * leave as segments are decided (an account that can pay for only part of a long upload gets the first
 * objects before the stream stops, and is charged nothing); a client that leaves mid-stream is charged
 * nothing; a long translated stream re-translates only within its budget and ends with the whole translation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../../helpers/test-server.js';
import { chargesSettled } from '../../helpers/settled.js';
import { startNativeServer } from './sdk-axios.js';
import { spokenPhrases, wavBytes } from '../../helpers/audio.js';
import { encodeWithFfmpeg } from '../../unit/codecs/helpers/ffmpeg.js';
import { RETRANSLATION_FACTOR } from '../../../src/api/native/transcribe-stream.js';
import { jsSdkTranscribe, jsSdkTranscribeStream } from './transcribe-clients.js';

const PHRASES = ['i ni ce', 'n fa ni n ba bɛ malo dun', 'ɔ ɲɔ ŋa kɛnɛ'];
const wav = wavBytes(spokenPhrases(PHRASES).samples, 16000);
/** 36 phrases, ≈ 100 s: long enough that its transcription is far from over when its first segment is out. */
const LONG_PHRASES = Array.from({ length: 12 }, () => PHRASES).flat();
const longSpeech = spokenPhrases(LONG_PHRASES);

let t: TestServer;
beforeAll(async () => {
  t = await startNativeServer();
}, 120_000);
afterAll(() => t.close());

const FUNDS = 10_000_000;
// A response is charged once it was delivered: a moment after the client has it.
const balance = async (accountId: string) => (await chargesSettled(t), await t.server.store.getAccount(accountId))!.balanceMicros;
const rows = async (accountId: string) =>
  (await chargesSettled(t), await t.server.store.listUsage({ accountId })).map(({ model, unit, quantity, unitPriceMicros, costMicros }) => ({
    model,
    unit,
    quantity,
    unitPriceMicros,
    costMicros,
  }));

async function primary(apiKey: string, path: string, fields: Record<string, string>): Promise<void> {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  form.append('file', new Blob([wav]), 'speech.wav');
  const res = await fetch(`${t.baseUrl}/openai/v1${path}`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}` }, body: form });
  expect(res.status).toBe(200);
  await res.text();
}

describe('the ledger of a native call equals that of the same work on the primary surface', () => {
  const cases = [
    { name: 'v1', version: 1, french: false, stream: false, path: '/audio/transcriptions', fields: { model: 'djelia-asr-v1' } },
    { name: 'v2 stream', version: 2, french: false, stream: true, path: '/audio/transcriptions', fields: { model: 'djelia-asr-v2', stream: 'true' } },
    {
      name: 'v2 translate_to_french',
      version: 2,
      french: true,
      stream: false,
      path: '/audio/translations',
      fields: { model: 'djelia-asr-v2', language: 'fra_Latn' },
    },
    {
      name: 'v1 stream translate_to_french',
      version: 1,
      french: true,
      stream: true,
      path: '/audio/translations',
      fields: { model: 'djelia-asr-v1', language: 'fra_Latn' },
    },
  ] as const;
  for (const c of cases) {
    it(c.name, async () => {
      const native = await t.newAccount(FUNDS);
      const options = { baseUrl: t.baseUrl, apiKey: native.apiKey, version: c.version, translateToFrench: c.french };
      if (c.stream) for await (const _ of jsSdkTranscribeStream(options, wav));
      else await jsSdkTranscribe(options, wav);
      const reference = await t.newAccount(FUNDS);
      await primary(reference.apiKey, c.path, c.fields);

      const charged = await rows(native.accountId);
      expect(charged).toEqual(await rows(reference.accountId));
      expect(charged.map((r) => r.unit)).toEqual(c.french ? ['second', 'character'] : ['second']);
      expect(charged[0]!.model).toBe(`djelia-asr-v${c.version}`);
      expect(FUNDS - (await balance(native.accountId))).toBe(FUNDS - (await balance(reference.accountId)));
      expect(FUNDS - (await balance(native.accountId))).toBeGreaterThan(0);
    });
  }
});

describe('NDJSON leaves as segments are decided', () => {
  it('an account that can pay for 60 s of a 100 s upload without a declared duration gets its first segments, then the stream stops, charged nothing', async () => {
    const adts = await encodeWithFfmpeg([longSpeech.samples], 16000, ['-c:a', 'aac', '-b:a', '64k', '-f', 'adts'], 'aac');
    const account = await t.newAccount(60 * 100); // the default price: 100 micros a second
    const form = new FormData();
    form.append('file', new Blob([adts]), 'long.aac');
    const res = await fetch(`${t.baseUrl}/api/v2/models/transcribe/stream`, { method: 'POST', headers: { 'x-api-key': account.apiKey }, body: form });
    // Had the server waited for the whole transcript, the balance would have run out first: a 402, no body.
    expect(res.status).toBe(200);
    const lines = (await res.text())
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line));
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.length).toBeLessThan(LONG_PHRASES.length);
    // (AAC at 64 kbit/s blurs a few letters for the legacy model: the words are checked on WAV elsewhere.)
    expect(lines[0]).toMatchObject({ text: LONG_PHRASES[0] });
    for (let i = 1; i < lines.length; i++) expect(lines[i].start).toBeGreaterThan(lines[i - 1].end);
    expect(lines.at(-1).end).toBeLessThan(60); // only audio the account could pay for reached the model
    expect(await balance(account.accountId)).toBe(60 * 100);
    expect(await rows(account.accountId)).toEqual([]);
    expect(t.server.ledger.openReservations).toBe(0);
  }, 60_000);

  it('a client that leaves after the first object is charged nothing, and its hold is released', async () => {
    const account = await t.newAccount(FUNDS);
    const controller = new AbortController();
    const form = new FormData();
    form.append('file', new Blob([wavBytes(longSpeech.samples, 16000)]), 'long.wav');
    const res = await fetch(`${t.baseUrl}/v1/models/transcribe/stream`, {
      method: 'POST',
      headers: { 'x-api-key': account.apiKey },
      body: form,
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    let received = '';
    while (!received.includes('\n')) received += new TextDecoder().decode((await reader.read()).value);
    expect(JSON.parse(received.split('\n')[0]!)).toMatchObject({ text: LONG_PHRASES[0] });
    controller.abort();
    await expect.poll(() => t.server.ledger.openReservations, { timeout: 20_000 }).toBe(0);
    expect(await rows(account.accountId)).toEqual([]);
    expect(await balance(account.accountId)).toBe(FUNDS);
  }, 60_000);
});

describe('a translated stream re-translates within its budget', () => {
  it('objects are the French of the transcript up to the segments the rule picks, the last the whole; only the final transcript is charged', async () => {
    const account = await t.newAccount(FUNDS);
    const objects: { text: string }[] = [];
    for await (const o of jsSdkTranscribeStream({ baseUrl: t.baseUrl, apiKey: account.apiKey, translateToFrench: true }, wavBytes(longSpeech.samples, 16000)))
      objects.push(o as { text: string });
    // The rule, from its statement: re-translate at a segment while the characters re-translated so far,
    // counting this transcript, stay within RETRANSLATION_FACTOR × this transcript; always end with the whole.
    const prefixes: string[] = [];
    let spent = 0;
    LONG_PHRASES.forEach((_, i) => {
      const prefix = LONG_PHRASES.slice(0, i + 1).join(' ');
      const n = [...prefix].length;
      if (spent + n <= RETRANSLATION_FACTOR * n) (prefixes.push(prefix), (spent += n));
    });
    const whole = LONG_PHRASES.join(' ');
    if (prefixes.at(-1) !== whole) prefixes.push(whole);
    expect(prefixes.length).toBeLessThan(LONG_PHRASES.length); // the budget folds some segments
    const work = prefixes.reduce((sum, p) => sum + [...p].length, 0);
    expect(work).toBeLessThanOrEqual((RETRANSLATION_FACTOR + 1) * [...whole].length);

    const expected: string[] = [];
    for (const prefix of prefixes) expected.push(await frenchOf(prefix));
    expect(objects.map((o) => o.text)).toEqual(expected);
    const charged = await rows(account.accountId);
    expect(charged[1]).toMatchObject({ unit: 'character', quantity: [...whole].length });
  }, 60_000);
});

async function frenchOf(bambara: string): Promise<string> {
  const res = await fetch(`${t.baseUrl}/compat/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'banjugu-1',
      messages: [{ role: 'user', content: bambara }],
      djelia: { source_language: 'bam_Latn', target_language: 'fra_Latn' },
    }),
  });
  return ((await res.json()) as any).choices[0].message.content;
}
