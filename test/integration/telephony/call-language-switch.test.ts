/**
 * A relay app that changes the call's transcription language mid-call (ConversationRelay `language`): after
 * French the caller's next turn reaches the app translated, with the Bambara beside it; after Bambara again,
 * the turn arrives as heard, untranslated. (The call sets its realtime session's translation target
 * directly: a French or English target, or none.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../../helpers/test-server.js';
import { startRelayApp, type RelayApp } from '../../helpers/relay-app.js';
import { callerSpeech, dialCarrier, mintToken, startTelephonyServer } from '../../helpers/telephony.js';

const CALLER_BAM = 'fa ni ba ye den ye';
const CALLER_FRA = 'père ni mère voir enfant voir';

let t: TestServer;
let app: RelayApp;
beforeAll(async () => {
  t = await startTelephonyServer();
  // French from the start of the call; back to Bambara once the first turn has arrived.
  app = await startRelayApp((connection) => {
    void connection.next('setup').then(() => connection.send({ type: 'language', transcriptionLanguage: 'fr-FR' }));
    void connection.next('prompt').then(() => connection.send({ type: 'language', transcriptionLanguage: 'bm-ML' }));
  });
}, 120_000);
afterAll(async () => {
  await app.close();
  await t.close();
});

describe('the app switches the transcription language mid-call', () => {
  it('French: the turn arrives translated; Bambara again: as heard', async () => {
    const token = await mintToken(t, { relay_url: app.url });
    const speech = await callerSpeech(t, CALLER_BAM);
    const connection = app.nextConnection();
    const { call, closed } = await dialCarrier(t, 'twilio', { token });
    const relay = await connection;
    await relay.next((m) => m.json?.type === 'setup');
    await call.silence(300);
    await call.speak(speech);
    await call.silence(1200);
    expect((await relay.next('prompt')).json).toEqual({
      type: 'prompt',
      voicePrompt: CALLER_FRA,
      lang: 'fr-FR',
      last: true,
      original: { lang: 'bm-ML', voicePrompt: CALLER_BAM },
    });

    await call.speak(speech);
    await call.silence(1200);
    await expect.poll(() => relay.ofType('prompt').length, { timeout: 20_000 }).toBe(2);
    const second = relay.ofType('prompt')[1];
    expect(second).toMatchObject({ type: 'prompt', voicePrompt: CALLER_BAM, last: true });
    expect(second).not.toHaveProperty('original');
    call.hangup();
    await closed;
  }, 60_000);
});
