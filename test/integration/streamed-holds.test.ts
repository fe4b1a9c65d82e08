/**
 * Holds with streamed audio: the duration of an upload whose container declares none (ADTS) becomes known
 * only as it is decoded, so the hold is raised window by window before the model gets each one. An account
 * that can pay for 10 s of audio: a 30 s ADTS upload ends with 402 once the decoded audio passes what it
 * can cover, charged nothing; a 30 s WAV (declared) is refused up front; an 8 s ADTS upload is served and
 * charged its decoded seconds — the balance never goes below zero.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { chargesSettled } from '../helpers/settled.js';
import { spokenPhrases, wavBytes } from '../helpers/audio.js';
import { encodeWithFfmpeg } from '../unit/codecs/helpers/ffmpeg.js';

const TEN_SECONDS_MICROS = 10 * 100; // the default price: 100 micros a second

let t: TestServer;
let long: { adts: Uint8Array; wav: Buffer };
let short: Uint8Array;

beforeAll(async () => {
  t = await startTestServer({ config: { modelsManifest: 'models/kuma-models.json', demoPack: false } });
  const speech = (n: number) =>
    spokenPhrases(
      Array.from({ length: n }, () => 'i ni ce n fa ni n ba bɛ'),
      16000,
      1,
    );
  const thirty = speech(9).samples.subarray(0, 16000 * 30);
  long = { adts: await encodeWithFfmpeg([thirty], 16000, ['-c:a', 'aac', '-b:a', '64k', '-f', 'adts'], 'aac'), wav: wavBytes(thirty, 16000) };
  short = await encodeWithFfmpeg([speech(2).samples.subarray(0, 16000 * 8)], 16000, ['-c:a', 'aac', '-b:a', '64k', '-f', 'adts'], 'aac');
  await t.server.enginesReady;
}, 120_000);
afterAll(() => t.close());

async function transcribe(apiKey: string, file: Uint8Array, name: string): Promise<{ status: number; body: any }> {
  const form = new FormData();
  form.append('file', new Blob([file]), name);
  const res = await fetch(`${t.baseUrl}/openai/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}` }, body: form });
  return { status: res.status, body: await res.json() };
}

// A response is charged once it was delivered: a moment after the client has it.
const balance = async (accountId: string) => (await chargesSettled(t), await t.server.store.getAccount(accountId))!.balanceMicros;

it('an upload that declares no duration is stopped with 402 when its decoded audio passes what the account can cover, charged nothing', async () => {
  const account = await t.newAccount(TEN_SECONDS_MICROS);
  const result = await transcribe(account.apiKey, long.adts, 'long.aac');
  expect(result).toMatchObject({ status: 402, body: { error: { code: 'insufficient_quota' } } });
  expect(await balance(account.accountId)).toBe(TEN_SECONDS_MICROS);
  expect(t.server.ledger.openReservations).toBe(0);
});

it('an upload that declares its duration is refused up front when that is more than the account can cover', async () => {
  const account = await t.newAccount(TEN_SECONDS_MICROS);
  expect(await transcribe(account.apiKey, long.wav, 'long.wav')).toMatchObject({ status: 402, body: { error: { code: 'insufficient_quota' } } });
  expect(await balance(account.accountId)).toBe(TEN_SECONDS_MICROS);
});

it('an upload within the balance is served and charged its decoded seconds', async () => {
  const account = await t.newAccount(TEN_SECONDS_MICROS);
  const result = await transcribe(account.apiKey, short, 'short.aac');
  expect(result.status).toBe(200);
  const seconds = result.body.usage.seconds as number;
  expect(seconds).toBeGreaterThan(7.9);
  expect(seconds).toBeLessThan(8.2); // AAC priming and padding
  expect(await balance(account.accountId)).toBe(TEN_SECONDS_MICROS - Math.ceil(seconds * 100 - 1e-9));
});
