/**
 * Voice relay mode end to end, with a simulated Twilio Media Stream (Twilio's message order and string
 * fields) and a ConversationRelay application: the caller's Bambara reaches the app as the exact `prompt`;
 * the app's reply comes back as paced μ-law that transcribes to the reply; marks are echoed; caller speech
 * during the reply interrupts it (`clear` to the carrier, `interrupt` to the app with what was heard).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../../helpers/test-server.js';
import { startRelayApp, wordByWordApp, type RelayApp } from '../../helpers/relay-app.js';
import { callerSpeech, dialCarrier, mintToken, startTelephonyServer, transcribePhone } from '../../helpers/telephony.js';

const CALLER = 'n bɛ taa sugu la';
const REPLY = 'i ni ce i ka kɛnɛ wa';
const LONG_REPLY = Array.from({ length: 12 }, () => 'an bɛ taa dugu la sini sɔgɔma').join(' ');

let t: TestServer;
let app: RelayApp;
let reply = REPLY;
beforeAll(async () => {
  t = await startTelephonyServer();
  app = await startRelayApp(wordByWordApp(() => reply));
}, 120_000);
afterAll(async () => {
  await app.close();
  await t.close();
});

describe('Twilio voice relay', () => {
  it('caller speech → exact prompt; the reply → paced μ-law that says it; marks echoed; the call record', async () => {
    reply = REPLY;
    const token = await mintToken(t, { relay_url: app.url });
    const speech = await callerSpeech(t, CALLER);
    const connection = app.nextConnection();
    const { call, closed } = await dialCarrier(t, 'twilio', { token });
    const relay = await connection;
    const setup = (await relay.next('setup')).json;
    expect(setup).toMatchObject({ type: 'setup', callSid: expect.stringMatching(/^CA/), customParameters: {} });
    await call.silence(300);
    await call.speak(speech);
    await call.silence(1200);
    const prompt = (await relay.next('prompt')).json;
    expect(prompt).toEqual({ type: 'prompt', voicePrompt: CALLER, lang: 'bm-ML', last: true });
    // The reply plays: wait until every mark Kuma sent has been echoed and the audio stopped coming.
    await call.waitFor((log) => log.marks.length > 0 && log.marks.every((m) => m.echoedAt !== null), 20_000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(call.log.protocolErrors).toEqual([]);
    expect(call.log.clears).toEqual([]);
    for (const a of call.log.audio) expect(a.bytes.length).toBe(160);
    expect(await transcribePhone(t, call.receivedPcm())).toBe(REPLY);
    call.hangup();
    await closed;
    await expect.poll(async () => (await t.server.store.listCalls({ accountId: t.accountId })).length, { timeout: 10_000 }).toBe(1);
    const [record] = await t.server.store.listCalls({ accountId: t.accountId });
    expect(record).toMatchObject({ carrier: 'twilio', mode: 'relay', turns: 1, charactersSynthesized: [...REPLY].length, endReason: 'caller_hangup' });
    expect(record!.costMicros).toBeGreaterThan(0);
  }, 60_000);

  it('a caller who speaks from the first frame, while Kuma is still dialling the app, is heard whole', async () => {
    reply = REPLY;
    const token = await mintToken(t, { relay_url: app.url });
    const speech = await callerSpeech(t, CALLER);
    const connection = app.nextConnection();
    const { call } = await dialCarrier(t, 'twilio', { token });
    await call.speak(speech);
    await call.silence(1200);
    const relay = await connection;
    expect((await relay.next('prompt')).json.voicePrompt).toBe(CALLER);
    expect(relay.received[0]!.json.type).toBe('setup');
    call.hangup();
  }, 60_000);

  it('barge-in: caller speech during the reply → clear to Twilio, interrupt to the app with the words heard', async () => {
    reply = LONG_REPLY;
    const token = await mintToken(t, { relay_url: app.url });
    const speech = await callerSpeech(t, CALLER);
    const connection = app.nextConnection();
    const { call } = await dialCarrier(t, 'twilio', { token });
    const relay = await connection;
    await call.silence(300);
    await call.speak(speech);
    await call.silence(1000);
    await relay.next('prompt');
    // Let a couple of seconds of the reply play, then speak over it.
    await call.waitFor((log) => log.audio.length >= 100, 20_000);
    await call.speak(speech);
    await call.silence(1000);
    await call.waitFor((log) => log.clears.length > 0, 20_000);
    const interrupt = (await relay.next('interrupt')).json;
    expect(interrupt.type).toBe('interrupt');
    expect(typeof interrupt.durationUntilInterruptMs).toBe('number');
    expect(interrupt.durationUntilInterruptMs).toBeGreaterThan(0);
    // Whole words of the reply, from its start.
    expect(`${LONG_REPLY} `.startsWith(`${interrupt.utteranceUntilInterrupt} `)).toBe(true);
    expect(interrupt.utteranceUntilInterrupt.length).toBeGreaterThan(0);
    expect(interrupt.utteranceUntilInterrupt.length).toBeLessThan(LONG_REPLY.length);
    call.hangup();
  }, 60_000);
});
