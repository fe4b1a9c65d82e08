/**
 * What goes wrong on a phone line, and how Kuma ends it: no token, a bad or expired one, a relay host the
 * allow-list refuses, frames that are not the carrier's protocol, a carrier that never sends `start`, an app
 * that never answers. Each gets a clear close (code and reason), nothing is charged for a refused call, no
 * hold is left open, and the account's call places come back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { TestServer } from '../../helpers/test-server.js';
import { startSilentServer } from '../../helpers/relay-app.js';
import { connect, wsUrl } from '../../helpers/websocket-client.js';
import { callerSpeech, dialCarrier, mintToken, startTelephonyServer } from '../../helpers/telephony.js';
import { mintCallToken, TOKEN_SECRET_NAME } from '../../../src/telephony/call-token.js';

let t: TestServer;
let silent: Awaited<ReturnType<typeof startSilentServer>>;
beforeAll(async () => {
  t = await startTelephonyServer({ telephonyStartTimeoutMs: 500, telephonyRelayConnectTimeoutMs: 500, telephonyMaxCallsPerAccount: 1 });
  silent = await startSilentServer();
}, 120_000);
afterAll(async () => {
  await silent.close();
  await t.close();
});

/** Nothing charged to the account, no hold left, and the account can place a call again. */
async function nothingLeft(accountId: string): Promise<void> {
  await expect.poll(() => t.server.ledger.openReservations, { timeout: 5000 }).toBe(0);
  expect(await t.server.store.listUsage({ accountId })).toEqual([]);
}

describe('refused and failed calls', () => {
  it('a start without a token is closed 1008 before any audio is processed', async () => {
    const account = await t.newAccount(1_000_000);
    const { call, closed } = await dialCarrier(t, 'twilio', {});
    void call.speak(await callerSpeech(t, 'n bɛ taa')).catch(() => {});
    expect(await closed).toMatchObject({ code: 1008, reason: 'invalid_call_token' });
    await nothingLeft(account.accountId);
  });

  it('a bad ?token= is refused before the upgrade (401); a tampered or expired token in start is closed 1008', async () => {
    const refused = await connect(wsUrl(t.baseUrl, '/telephony/v1/twilio?token=kct1.bad.token'));
    expect(refused).toMatchObject({ kind: 'refused', status: 401, body: { error: { code: 'invalid_api_key' } } });
    const token = await mintToken(t, { mode: 'transcription' });
    const tampered = `${token.slice(0, -2)}${token.endsWith('A') ? 'B' : 'A'}`;
    expect(await (await dialCarrier(t, 'twilio', { token: tampered })).closed).toMatchObject({ code: 1008, reason: 'invalid_call_token' });
    const secret = await t.server.store.serverSecret(TOKEN_SECRET_NAME, () => 'unused');
    const key = (await t.server.store.listKeys(t.accountId))[0]!;
    const expired = mintCallToken(
      secret,
      {
        accountId: t.accountId,
        keyId: key.id,
        mode: 'transcription',
        transcriptionLanguage: 'bam',
        ttsLanguage: 'bam',
        interruptible: 'any',
        allowRelayOverride: false,
        ttlSeconds: 60,
      },
      Date.now() - 3_600_000,
    ).token;
    expect(await (await dialCarrier(t, 'twilio', { token: expired })).closed).toMatchObject({ code: 1008, reason: 'invalid_call_token' });
  });

  it('a relay URL the allow-list refuses (given by the call) is never dialled: the call ends app_unreachable, free', async () => {
    const account = await t.newAccount(1_000_000);
    const token = await mintToken(t, { mode: 'relay', allow_relay_override: true }, account.apiKey);
    const ws = new WebSocket(wsUrl(t.baseUrl, '/telephony/v1/twilio'));
    const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
    await new Promise((resolve) => ws.once('open', resolve));
    const { simulateTwilio } = await import('../../helpers/carriers/twilio.js');
    simulateTwilio(ws, { customParameters: { token, relay_url: 'ws://10.1.2.3:9/relay' } }).open();
    expect(await closed).toMatchObject({ code: 1011, reason: 'app_unreachable' });
    await nothingLeft(account.accountId);
  });

  it('an app that never answers the upgrade: app_unreachable after the connect timeout, free; the call place comes back', async () => {
    const account = await t.newAccount(1_000_000);
    const token = await mintToken(t, { relay_url: silent.url }, account.apiKey);
    for (let i = 0; i < 2; i++) {
      // The cap is one call per account: the second is accepted only if the first gave its place back.
      const { closed } = await dialCarrier(t, 'twilio', { token });
      expect(await closed).toMatchObject({ code: 1011, reason: 'app_unreachable' });
    }
    expect(silent.connections()).toBe(2);
    await nothingLeft(account.accountId);
  });

  it('frames that are not the carrier protocol are closed 1008 malformed_frame; a second call is then served', async () => {
    const token = await mintToken(t, { mode: 'transcription' });
    for (const garbage of [
      'not json',
      JSON.stringify({ event: 'media', media: { payload: '***' } }),
      JSON.stringify({ event: 'start', start: { streamSid: 5 } }),
    ]) {
      const { call, closed } = await dialCarrier(t, 'twilio', { token });
      call.sendRaw({ text: garbage });
      expect(await closed).toMatchObject({ code: 1008, reason: 'malformed_frame' });
    }
  });

  it('a carrier that never sends start is closed 1008 start_timeout', async () => {
    const ws = new WebSocket(wsUrl(t.baseUrl, '/telephony/v1/twilio'));
    const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
    await new Promise((resolve) => ws.once('open', resolve));
    ws.send(JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' }));
    expect(await closed).toMatchObject({ code: 1008, reason: 'start_timeout' });
  });

  it('a second call over the account cap is closed 1008 call_limit', async () => {
    const account = await t.newAccount(1_000_000);
    const token = await mintToken(t, { mode: 'transcription' }, account.apiKey);
    const first = await dialCarrier(t, 'twilio', { token });
    await first.call.silence(200);
    const second = await dialCarrier(t, 'twilio', { token });
    expect(await second.closed).toMatchObject({ code: 1008, reason: 'call_limit' });
    first.call.hangup();
    await first.closed;
  });
});
