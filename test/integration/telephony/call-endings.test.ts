/**
 * How a relay call ends from the app's side — `end` with handoffData, or the app's socket closing — and the
 * Twilio stream signature: with KUMA_TWILIO_AUTH_TOKEN set, an upgrade without a valid X-Twilio-Signature
 * over its exact URL (query included) is refused 401, a signed one is served.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { TestServer } from '../../helpers/test-server.js';
import { endingApp, startRelayApp, type RelayApp } from '../../helpers/relay-app.js';
import { connect, wsUrl } from '../../helpers/websocket-client.js';
import { dialCarrier, mintToken, startTelephonyServer } from '../../helpers/telephony.js';
import { twilioSignature } from '../../../src/telephony/twilio-signature.js';

const AUTH_TOKEN = 'twilio-auth-token-for-tests';

let t: TestServer;
let ending: RelayApp;
let closing: RelayApp;
beforeAll(async () => {
  t = await startTelephonyServer({ twilioAuthToken: AUTH_TOKEN });
  ending = await startRelayApp(endingApp('{"to":"agent"}'));
  closing = await startRelayApp((connection) => void connection.next('setup').then(() => connection.close(1000, 'bye')));
}, 120_000);
afterAll(async () => {
  await ending.close();
  await closing.close();
  await t.close();
});

/** Dials Twilio's path as Twilio does: with the signature of the URL it dials. */
async function signedDial(query: string) {
  const url = wsUrl(t.baseUrl, `/telephony/v1/twilio${query}`);
  const signed = `wss://127.0.0.1:${t.server.port}/telephony/v1/twilio${query}`;
  return dialCarrier(t, 'twilio', {}, query, { 'x-twilio-signature': twilioSignature(AUTH_TOKEN, signed) }).then((c) => ({ ...c, url }));
}

describe('call endings and Twilio signatures', () => {
  it('the app ends the call (end + handoffData): the stream closes 1000 app_ended, the record says so', async () => {
    const account = await t.newAccount(1_000_000);
    const token = await mintToken(t, { relay_url: ending.url }, account.apiKey);
    const { closed } = await signedDial(`?token=${token}`);
    expect(await closed).toMatchObject({ code: 1000, reason: 'app_ended' });
    await expect
      .poll(async () => (await t.server.store.listCalls({ accountId: account.accountId })).map((c) => c.endReason), { timeout: 5000 })
      .toEqual(['app_ended']);
    expect(t.logs.some((line) => line.includes('"handoffData":"{\\"to\\":\\"agent\\"}"'))).toBe(true);
  });

  it('the app closes its socket: the call ends app_disconnected', async () => {
    const token = await mintToken(t, { relay_url: closing.url });
    const { closed } = await signedDial(`?token=${token}`);
    expect(await closed).toMatchObject({ code: 1000, reason: 'app_disconnected' });
  });

  it('no signature, or one over another URL, is refused 401 before the upgrade', async () => {
    const token = await mintToken(t, { mode: 'transcription' });
    const unsigned = await connect(wsUrl(t.baseUrl, `/telephony/v1/twilio?token=${token}`));
    expect(unsigned).toMatchObject({ kind: 'refused', status: 401 });
    const other = twilioSignature(AUTH_TOKEN, `wss://127.0.0.1:${t.server.port}/telephony/v1/twilio`);
    const wrong = await connect(wsUrl(t.baseUrl, `/telephony/v1/twilio?token=${token}`), { headers: { 'x-twilio-signature': other } });
    expect(wrong).toMatchObject({ kind: 'refused', status: 401 });
    const ok = await connect(wsUrl(t.baseUrl, `/telephony/v1/twilio?token=${token}`), {
      headers: { 'x-twilio-signature': twilioSignature(AUTH_TOKEN, `wss://127.0.0.1:${t.server.port}/telephony/v1/twilio?token=${token}`) },
    });
    expect(ok.kind).toBe('open');
    if (ok.kind === 'open') (ok.ws as WebSocket).close();
  });
});
