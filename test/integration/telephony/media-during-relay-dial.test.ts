/**
 * A carrier streams media from the moment it sends `start` (Twilio does not wait for anything): frames that
 * arrive while Kuma is still dialling the relay app must not end the call. Found by load-tests/telephony, whose
 * callers (like Twilio) do not wait for the app's connection before streaming.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { TestServer } from '../../helpers/test-server.js';
import { echoApp, startRelayApp, type RelayApp } from '../../helpers/relay-app.js';
import { dialCarrier, mintToken, startTelephonyServer } from '../../helpers/telephony.js';

let t: TestServer;
let app: RelayApp;
beforeAll(async () => {
  t = await startTelephonyServer();
  app = await startRelayApp(echoApp);
}, 120_000);
afterAll(async () => {
  await app.close();
  await t.close();
});

it('media sent right after start, while the relay app is being dialled, leaves the call open', async () => {
  const token = await mintToken(t, { relay_url: app.url });
  const connection = app.nextConnection();
  // Four times real time: frames every 5 ms, so several reach Kuma between its accepting the token and the
  // relay link being up.
  const { call, closed } = await dialCarrier(t, 'twilio', { token, speed: 4 });
  let closedEarly: { code: number; reason: string } | null = null;
  void closed.then((c) => (closedEarly = c));
  await call.silence(2000);
  // A call closed meanwhile never gets its app: wait for whichever comes first.
  await Promise.race([connection, closed]);
  expect(closedEarly).toBeNull();
  call.hangup();
  expect((await closed).code).toBe(1000);
}, 60_000);
