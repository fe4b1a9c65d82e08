/**
 * The bound of the revocation rule (README "Accounts, keys and prices"): a key revoked by another process
 * (`npm run keys -- revoke`, another node) ends its open sessions within KUMA_AUTH_CACHE_TTL_MS (default 1 s,
 * one sweep period) — measured here as under 2 s from the revocation's commit to each client's close, for a
 * realtime session, a speech socket and a call. Revocations through this process's admin API end them at once
 * (test/integration/key-revocation.test.ts checks what each session says and what is charged).
 */
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/sqlite-store.js';
import { RealtimeClient } from '../helpers/realtime.js';
import { dialCarrier, mintToken, startTelephonyServer } from '../helpers/telephony.js';
import type { TestServer } from '../helpers/test-server.js';
import { SpeechSocketClient } from '../integration/speech-socket-client.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTelephonyServer();
}, 120_000);
afterAll(() => t?.close());

it('a key revoked by another process: its realtime session, speech socket and call all close within 2 s', async () => {
  const account = await t.newAccount(10_000_000);
  const realtime = await RealtimeClient.connect(t, 'intent=transcription&model=sunjata-1', { apiKey: account.apiKey });
  const speech = await SpeechSocketClient.open(t.baseUrl, '/openai/v1/audio/speech/stream?output_format=pcm', { authorization: `Bearer ${account.apiKey}` });
  const token = await mintToken(t, { mode: 'transcription' }, account.apiKey);
  const phone = await dialCarrier(t, 'twilio', { token } as never);
  // The call exists (its start message was taken) once the active-calls gauge counts it.
  await expect.poll(async () => (await t.server.metrics.render()).body).toMatch(/kuma_telephony_calls_active\{carrier="twilio"\} 1/);

  const closedAt = (closed: Promise<{ code: number; reason: string }>) => closed.then((c) => ({ ...c, at: performance.now() }));
  const closes = [closedAt(realtime.closed), closedAt(speech.closed), closedAt(phone.closed)];
  const other = await openSqliteStore(path.join(t.dir, 'kuma.sqlite'));
  expect(await other.revokeKey(account.keyId)).toBe(true);
  const revokedAt = performance.now();
  await other.close();

  for (const close of await Promise.all(closes)) {
    expect(close).toMatchObject({ code: 1008, reason: 'key_revoked' });
    expect(close.at - revokedAt).toBeLessThan(2000);
  }
}, 60_000);
