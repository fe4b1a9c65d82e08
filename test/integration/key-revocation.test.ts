/**
 * Revoking a key ends what is open with it, through real sockets: a realtime session opened with the key
 * (/openai/v1), one opened with a client secret the key minted (/compat/v1), a streaming speech socket, a
 * Twilio call authorised by a call token the key minted, and an AudioSocket call on the configured key. Each
 * is busy (speech streaming in, audio streaming out, turns being transcribed) when the key is revoked — by
 * the admin API (this process: at once), by `npm run keys -- revoke` or by another connection writing the
 * same database (another process: found by the sweep). Each ends with its documented close and reason, the call record and webhook say `key_revoked`,
 * and the ledger holds no charge stamped after the revocation, nor any written later.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey, hashApiKey } from '../../src/auth/api-keys.js';
import { openSqliteStore } from '../../src/store/sqlite-store.js';
import { createAdminKey, adminClient, type AdminClient } from '../helpers/admin.js';
import WebSocket from 'ws';
import { connectAudioSocket, simulators } from '../helpers/carriers/index.js';
import { wsUrl } from '../helpers/websocket-client.js';
import { FRAME_BYTES, RealtimeClient, silence, speak } from '../helpers/realtime.js';
import { callerSpeech, callerSpeechPcm, dialCarrier, mintToken, startTelephonyServer } from '../helpers/telephony.js';
import type { TestServer } from '../helpers/test-server.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { SpeechSocketClient } from './speech-socket-client.js';

const COMPLETED = 'conversation.item.input_audio_transcription.completed';
const AUDIOSOCKET_KEY = generateApiKey();
const TURN = 'n bɛ taa sugu la';

let t: TestServer;
let admin: AdminClient;
let receiver: WebhookReceiver;
let pbx: { accountId: string; keyId: string };
beforeAll(async () => {
  t = await startTelephonyServer({ audioSocketPort: 0, audioSocketApiKey: AUDIOSOCKET_KEY, audioSocketSettings: JSON.stringify({ mode: 'transcription' }) });
  const account = await t.server.store.createAccount('pbx', 10_000_000);
  const key = await t.server.store.createKey(account.id, hashApiKey(AUDIOSOCKET_KEY), 'pbx');
  pbx = { accountId: account.id, keyId: key.id };
  admin = adminClient(t.baseUrl, (await createAdminKey(t.server.store)).adminKey);
  receiver = await startWebhookReceiver();
}, 120_000);
afterAll(async () => {
  await receiver?.close();
  await t?.close();
});

/**
 * Revokes through the admin API (this process), with `npm run keys -- revoke` (the CLI, another process), or
 * on another connection to the database file (what another node or process does).
 */
async function revoke(keyId: string, by: 'admin API' | 'keys CLI' | 'another process'): Promise<void> {
  if (by === 'admin API') {
    expect((await admin.call('DELETE', `/keys/${keyId}`)).status).toBe(200);
    return;
  }
  if (by === 'keys CLI') {
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/cli/keys.ts', 'revoke', keyId], {
      env: { ...process.env, KUMA_DB_PATH: path.join(t.dir, 'kuma.sqlite') },
    });
    expect(stdout).toContain(`Revoked key ${keyId}`);
    return;
  }
  const other = await openSqliteStore(path.join(t.dir, 'kuma.sqlite'));
  try {
    expect(await other.revokeKey(keyId)).toBe(true);
  } finally {
    await other.close();
  }
}

/** Settles within `ms`, or fails naming what did not happen (today's code never closes these sessions). */
function within<T>(promise: Promise<T>, what: string, ms = 10_000): Promise<T> {
  return Promise.race([promise, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms).unref())]);
}

/** Streams `audio` (speech then silence) in 20 ms appends, in real time, over and over until the socket closes. */
function streamRealtime(client: RealtimeClient, audio: Buffer): void {
  let offset = 0;
  const timer = setInterval(() => {
    if (client.ws.readyState !== client.ws.OPEN) return clearInterval(timer);
    client.send({ type: 'input_audio_buffer.append', audio: audio.subarray(offset, offset + FRAME_BYTES.pcm16).toString('base64') });
    offset = (offset + FRAME_BYTES.pcm16) % audio.length;
  }, 20);
}

/** The account's usage rows, and the key's revocation time as the store stamped it. */
async function ledger(accountId: string, keyId: string) {
  const revokedAt = (await t.server.store.getKey(keyId))!.revokedAt!;
  expect(revokedAt).not.toBeNull();
  return { revokedAt, rows: await t.server.store.listUsage({ accountId }) };
}

/** No charge is stamped after the revocation, and none is written later (checked again once the server is quiet). */
async function expectNothingChargedAfter(accountId: string, keyId: string): Promise<void> {
  const first = await ledger(accountId, keyId);
  expect(first.rows.filter((r) => r.createdAt > first.revokedAt)).toEqual([]);
  await expect.poll(() => t.server.ledger.openReservations, { timeout: 10_000 }).toBe(0);
  const later = await ledger(accountId, keyId);
  expect(later.rows).toEqual(first.rows);
}

describe.each(['admin API', 'keys CLI', 'another process'] as const)('a key revoked by the %s', (by) => {
  it("ends its realtime sessions (its own and a client secret's), its speech socket and its call token's call; nothing after is charged", async () => {
    const account = await t.newAccount(50_000_000);
    await t.server.store.setWebhook(account.accountId, { url: `${receiver.url}/${account.accountId}`, secret: 'whsec_revocation_test' });
    const speech = Buffer.concat([await speak(t, TURN), silence(1.2)]);
    const callerTurn = await callerSpeech(t, TURN);

    // A realtime session on the key itself, transcribing turn after turn.
    const own = await RealtimeClient.connect(t, 'intent=transcription&model=sunjata-1', { apiKey: account.apiKey });
    streamRealtime(own, speech);
    // One opened with a client secret the key minted, under the other prefix.
    const minted = await fetch(`${t.baseUrl}/openai/v1/realtime/client_secrets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${account.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ session: { type: 'transcription', audio: { input: { transcription: { model: 'sunjata-1' } } } } }),
    });
    const secret = ((await minted.json()) as { value: string }).value;
    const viaSecret = await RealtimeClient.connect(t, 'intent=transcription', { apiKey: secret, prefix: '/compat/v1' });
    streamRealtime(viaSecret, speech);
    // A speech socket with more text than it will have spoken by the revocation.
    const speaker = await SpeechSocketClient.open(t.baseUrl, '/openai/v1/audio/speech/stream?output_format=pcm', { authorization: `Bearer ${account.apiKey}` });
    speaker.send({ text: 'i ni ce. a ka kɛnɛ wa? n bɛ taa sugu la. an bɛ malo san. '.repeat(20) });
    // A phone call authorised by a call token the key minted, the caller speaking turn after turn.
    const token = await mintToken(t, { mode: 'transcription' }, account.apiKey);
    const phone = await dialCarrier(t, 'twilio', { token } as never);
    let hungUp = false;
    void phone.closed.then(() => (hungUp = true));
    void (async () => {
      while (!hungUp) {
        await phone.call.speak(callerTurn);
        await phone.call.silence(1000);
      }
    })();

    // Every session is at work, and charging: turns transcribed, audio spoken.
    await own.next(COMPLETED, 1, undefined, 30_000);
    await viaSecret.next(COMPLETED, 1, undefined, 30_000);
    await speaker.waitFor((m) => typeof m.audio === 'string', 'audio');
    await within(
      receiver.until((r) => r.some((x) => x.path === `/${account.accountId}` && x.event.type === 'transcript.final')),
      "the call's first turn",
      30_000,
    );
    expect((await t.server.store.listUsage({ accountId: account.accountId })).length).toBeGreaterThan(0);

    await revoke(account.keyId, by);

    // Realtime: an `error` event (invalid_request_error, key_revoked), then close 1008 key_revoked.
    for (const session of [own, viaSecret]) {
      expect(await within(session.closed, 'realtime close')).toEqual({ code: 1008, reason: 'key_revoked' });
      const last = session.events.at(-1)!;
      expect(last).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', code: 'key_revoked', message: expect.stringMatching(/revoked/) } });
    }
    // Speech socket: an error message naming key_revoked and the close code, then close 1008 key_revoked.
    expect(await within(speaker.closed, 'speech socket close')).toEqual({ code: 1008, reason: 'key_revoked' });
    expect(speaker.received.at(-1)!.json).toMatchObject({ error: 'key_revoked', code: 1008 });
    // The call: the carrier's stream closed 1008 key_revoked; the record and the webhook say why.
    expect(await within(phone.closed, 'call stream close')).toEqual({ code: 1008, reason: 'key_revoked' });
    await expect.poll(async () => (await t.server.store.listCalls({ accountId: account.accountId })).map((c) => c.endReason)).toEqual(['key_revoked']);
    await within(
      receiver.until((r) => r.some((x) => x.path === `/${account.accountId}` && x.event.type === 'call.ended')),
      'call.ended webhook',
    );
    const ended = receiver.received.find((x) => x.path === `/${account.accountId}` && x.event.type === 'call.ended')!;
    expect(ended.event.data).toMatchObject({ reason: 'key_revoked' });

    await expectNothingChargedAfter(account.accountId, account.keyId);
    // And the key opens nothing new.
    expect((await fetch(`${t.baseUrl}/openai/v1/models`, { headers: { authorization: `Bearer ${account.apiKey}` } })).status).toBe(401);
  }, 90_000);
});

describe('a call token checked before the upgrade', () => {
  it('whose key is revoked before the carrier sends `start`: the call is refused, close 1008 invalid_call_token, no call', async () => {
    const account = await t.newAccount(10_000_000);
    const token = await mintToken(t, { mode: 'transcription' }, account.apiKey);
    const ws = new WebSocket(wsUrl(t.baseUrl, `/telephony/v1/twilio?token=${token}`));
    const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    await revoke(account.keyId, 'admin API');
    simulators.twilio(ws, {}).open();
    expect(await within(closed, 'refusal')).toEqual({ code: 1008, reason: 'invalid_call_token' });
    expect(await t.server.store.listCalls({ accountId: account.accountId })).toEqual([]);
  });
});

describe('the AudioSocket key', () => {
  it('revoked by another process: its call is hung up (AudioSocket hangup frame), recorded key_revoked, nothing after charged', async () => {
    await t.server.store.setWebhook(pbx.accountId, { url: `${receiver.url}/pbx`, secret: 'whsec_revocation_test' });
    const callerTurn = await callerSpeechPcm(t, TURN, 8000);
    const call = await connectAudioSocket(t.server.audioSocketPort!, '127.0.0.1');
    call.open();
    let hungUp = false;
    void call
      .waitFor((log) => log.hangups.length > 0, 120_000)
      .then(
        () => (hungUp = true),
        () => {},
      );
    void (async () => {
      while (!hungUp) {
        await call.speak(callerTurn);
        await call.silence(1000);
      }
    })();
    await within(
      receiver.until((r) => r.some((x) => x.path === '/pbx' && x.event.type === 'transcript.final')),
      "the call's first turn",
      30_000,
    );

    await revoke(pbx.keyId, 'another process');

    await within(
      call.waitFor((log) => log.hangups.length > 0, 10_000),
      'AudioSocket hangup',
    );
    await expect.poll(async () => (await t.server.store.listCalls({ accountId: pbx.accountId })).map((c) => c.endReason)).toEqual(['key_revoked']);
    await within(
      receiver.until((r) => r.some((x) => x.path === '/pbx' && x.event.type === 'call.ended')),
      'call.ended webhook',
    );
    expect(receiver.received.find((x) => x.path === '/pbx' && x.event.type === 'call.ended')!.event.data).toMatchObject({ reason: 'key_revoked' });
    await expectNothingChargedAfter(pbx.accountId, pbx.keyId);
  }, 60_000);
});
