/**
 * Every carrier adapter end to end in voice relay mode, each with a simulated carrier that follows its
 * documented messages and field types (test/helpers/carriers): the caller's Bambara reaches the app as the exact
 * prompt, and the app's reply comes back in the carrier's own format, paced, transcribing to the reply. Marks
 * are echoed where the carrier has them. AudioSocket runs over the TCP listener with its configured API key.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey, hashApiKey } from '../../../src/auth/api-keys.js';
import type { TestServer } from '../../helpers/test-server.js';
import { startRelayApp, wordByWordApp, type RelayApp } from '../../helpers/relay-app.js';
import { connectAudioSocket, type SimulatedCall } from '../../helpers/carriers/index.js';
import { callerSpeechPcm, dialCarrier, mintToken, startTelephonyServer, transcribePhone } from '../../helpers/telephony.js';

const CALLER = 'n bɛ taa sugu la';
const REPLY = 'i ni ce';
const AUDIOSOCKET_KEY = generateApiKey();

let t: TestServer;
let app: RelayApp;
beforeAll(async () => {
  app = await startRelayApp(wordByWordApp(() => REPLY));
  t = await startTelephonyServer({ audioSocketPort: 0, audioSocketApiKey: AUDIOSOCKET_KEY, audioSocketSettings: JSON.stringify({ relay_url: app.url }) });
  await t.server.store.createKey(t.accountId, hashApiKey(AUDIOSOCKET_KEY), 'pbx');
}, 120_000);
afterAll(async () => {
  await app.close();
  await t.close();
});

/** Speaks the caller's turn, waits for the prompt and the whole reply; returns what the carrier received. */
async function converse(call: SimulatedCall): Promise<{ prompt: any; heard: string }> {
  const connection = app.nextConnection();
  const relay = await connection;
  await relay.next('setup');
  const speech = await callerSpeechPcm(t, CALLER, call.dialect.format.sampleRate as 8000 | 16000);
  await call.silence(300);
  await call.speak(speech);
  await call.silence(1200);
  const prompt = (await relay.next('prompt')).json;
  // The reply arrives paced, in real time: wait until it has begun and then stopped coming.
  await call.waitFor((log) => log.audio.length > 0, 20_000);
  const received = () => call.log.audio.reduce((n, a) => n + a.bytes.length, 0);
  for (let before = -1; before !== received();) {
    before = received();
    await new Promise((resolve) => setTimeout(resolve, 600));
  }
  return { prompt, heard: await transcribePhone(t, call.receivedPcm(), call.dialect.format.sampleRate) };
}

describe('every carrier, voice relay', () => {
  for (const carrier of ['telnyx', 'plivo', 'exotel', 'vonage'] as const) {
    it(`${carrier}: exact prompt, the reply heard in the carrier's format`, async () => {
      const token = await mintToken(t, { relay_url: app.url });
      const { call, closed } = await dialCarrier(t, carrier, { token, speed: 4 });
      const { prompt, heard } = await converse(call);
      expect(prompt).toMatchObject({ type: 'prompt', voicePrompt: CALLER, last: true });
      expect(heard).toBe(REPLY);
      expect(call.log.protocolErrors).toEqual([]);
      if (carrier !== 'exotel') expect(call.log.marks.length).toBeGreaterThan(0);
      call.hangup();
      await closed;
    }, 60_000);
  }

  it('audiosocket (TCP): exact prompt, the reply heard as 8 kHz linear PCM', async () => {
    const call = await connectAudioSocket(t.server.audioSocketPort!, '127.0.0.1', { speed: 4 });
    call.open();
    const { prompt, heard } = await converse(call);
    expect(prompt).toMatchObject({ type: 'prompt', voicePrompt: CALLER, last: true });
    expect(heard).toBe(REPLY);
    expect(call.log.protocolErrors).toEqual([]);
    call.hangup();
  }, 60_000);
});
