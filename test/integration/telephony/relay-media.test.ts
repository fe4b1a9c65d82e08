/**
 * The relay app's non-speech audio: `sendDigits` plays DTMF tones to the caller (each digit's two keypad
 * frequencies, found in the received audio by a Goertzel filter), and `play` fetches an audio file from an
 * allowed host, decodes it and plays it, in order with the speech around it. A `play` the server cannot
 * carry out (a 404) is answered with `error` and the call goes on.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../../helpers/test-server.js';
import { scriptedApp, startRelayApp, startStaticServer, type RelayApp, type StaticServer } from '../../helpers/relay-app.js';
import { dialCarrier, mintToken, startTelephonyServer, transcribePhone } from '../../helpers/telephony.js';

const PLAYED = 'an bɛ malo san';

let t: TestServer;
let files: StaticServer;
let app: RelayApp;
let wav: Uint8Array;
beforeAll(async () => {
  t = await startTelephonyServer();
  const res = await fetch(`${t.baseUrl}/openai/v1/audio/speech`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'jifili-1', input: PLAYED, response_format: 'wav' }),
  });
  wav = new Uint8Array(await res.arrayBuffer());
  files = await startStaticServer({ '/prompt.wav': { body: wav } });
}, 120_000);
afterAll(async () => {
  await app?.close();
  await files.close();
  await t.close();
});

/** Duration of a 16-bit mono PCM WAV (its header's rate, its data's length). */
function wavDurationMs(bytes: Uint8Array): number {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return ((bytes.length - 44) / 2 / view.getUint32(24, true)) * 1000;
}

/** Power of `freq` in `pcm` (Goertzel), relative to the signal's total power. */
function toneShare(pcm: Int16Array, freq: number, rate = 8000): number {
  const k = 2 * Math.cos((2 * Math.PI * freq) / rate);
  let s1 = 0;
  let s2 = 0;
  let total = 0;
  for (const v of pcm) {
    const s0 = v + k * s1 - s2;
    s2 = s1;
    s1 = s0;
    total += v * v;
  }
  return (s1 * s1 + s2 * s2 - k * s1 * s2) / (total * pcm.length || 1);
}

describe('relay media', () => {
  it('a preemptible reply gives way to the next one; text beyond what may wait is refused with an error', async () => {
    const long = Array.from({ length: 30 }, () => 'an bɛ taa dugu la sini sɔgɔma').join(' ');
    app = await startRelayApp(
      scriptedApp([
        { type: 'text', token: long, last: true, preemptible: true },
        { type: 'text', token: 'i ni ce', last: true },
        { type: 'text', token: 'a'.repeat(10_001), last: false },
      ]),
    );
    const token = await mintToken(t, { relay_url: app.url });
    const connection = app.nextConnection();
    const { call, closed } = await dialCarrier(t, 'twilio', { token });
    const relay = await connection;
    expect((await relay.next('error')).json.description).toMatch(/at most 5000 may wait/);
    // The second reply's phrase has played once its mark is echoed (the first was cut before its first mark).
    await call.waitFor((log) => log.clears.length > 0 && log.marks.some((m) => m.echoedAt !== null), 30_000);
    expect(await transcribePhone(t, call.playedPcm())).toBe('i ni ce');
    call.hangup();
    await closed;
    await app.close();
  }, 60_000);

  it('sendDigits plays the keypad tones; play plays the file, which says its words; a bad source gets an error', async () => {
    app = await startRelayApp(
      scriptedApp([
        { type: 'sendDigits', digits: '1' },
        { type: 'play', source: `${files.baseUrl}/missing.wav` },
        { type: 'play', source: `${files.baseUrl}/prompt.wav` },
      ]),
    );
    const token = await mintToken(t, { relay_url: app.url });
    const connection = app.nextConnection();
    const { call, closed } = await dialCarrier(t, 'twilio', { token });
    const relay = await connection;
    const error = (await relay.next('error')).json;
    expect(error.description).toMatch(/play/);
    // The tone (100 ms + its 100 ms gap, 1600 μ-law bytes), then the whole file: its fetch and decoding may
    // take a while on a loaded machine, so wait for its length rather than for a pause in the audio.
    const fileMs = wavDurationMs(wav);
    await call.waitFor((log) => log.audio.reduce((n, a) => n + a.bytes.length, 0) >= 1600 + fileMs * 8 * 0.95, 30_000);
    const received = () => call.log.audio.length;
    for (let before = -1; before !== received();) {
      before = received();
      await new Promise((resolve) => setTimeout(resolve, 600));
    }
    const pcm = call.receivedPcm();
    const tone = pcm.subarray(0, 800); // the first 100 ms: digit 1 = 697 Hz + 1209 Hz
    expect(toneShare(tone, 697)).toBeGreaterThan(10 * toneShare(tone, 941));
    expect(toneShare(tone, 1209)).toBeGreaterThan(10 * toneShare(tone, 1477));
    // After the tone (100 ms) and its gap (100 ms), the file.
    expect(await transcribePhone(t, pcm.subarray(1600))).toBe(PLAYED);
    expect(files.requests).toEqual(['/missing.wav', '/prompt.wav']);
    call.hangup();
    await closed;
  }, 60_000);
});
