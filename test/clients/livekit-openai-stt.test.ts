/**
 * LiveKit Agents' OpenAI STT plugin (@livekit/agents-plugin-openai), unchanged, driving its streaming STT
 * directly (AudioFrames in, SpeechEvents out; no room): one final per spoken turn at silence_duration_ms
 * 300, 350 (the plugin's default), 400 and 500, on the demo voice — whose synthetic consonants Silero scores
 * as non-speech for up to 0.7 s inside a word, which used to split a phrase into a turn and a phantom tail —
 * and on espeak-ng speech of Bambara text (when espeak-ng is installed); and its route to translated
 * transcripts: `model: 'banjugu-1'` with `language: 'fr'` (or the default `'en'`).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { initializeLogger, stt } from '@livekit/agents';
import * as openai from '@livekit/agents-plugin-openai';
import { AudioFrame } from '@livekit/rtc-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { resample } from '../../src/codecs/resample.js';
import { silence, speak, startRealtimeServer } from '../helpers/realtime.js';
import type { TestServer } from '../helpers/test-server.js';
import { describeClients } from './installed.js';

const DEMO_PHRASES = ['i ni ce i ka kɛnɛ wa', 'tɔɔrɔ si tɛ', 'an bɛ sini'];
/** Bambara text for espeak-ng's Swahili voice (no Bambara voice): open vowels written plain. */
const ESPEAK_PHRASES = ['i ni ce i ka kene wa', 'n ka kene kosebe', 'an be taa sugu la sini'];
const hasEspeak = (() => {
  try {
    execFileSync('espeak-ng', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
// .ci/run installs espeak-ng and sets KUMA_REQUIRE_ESPEAK=1: there the test below must run, never be skipped.
if (!hasEspeak && process.env.KUMA_REQUIRE_ESPEAK === '1') throw new Error('KUMA_REQUIRE_ESPEAK=1 but espeak-ng is not installed (apt-get install espeak-ng)');

/** 16-bit mono PCM → 20 ms AudioFrames at its rate (the plugin resamples to 24 kHz itself). */
function frames(pcm: Buffer, rate: number): AudioFrame[] {
  const out: AudioFrame[] = [];
  const step = (rate / 50) * 2;
  for (let i = 0; i < pcm.length; i += step) {
    const chunk = pcm.subarray(i, Math.min(i + step, pcm.length));
    const samples = new Int16Array(chunk.buffer.slice(chunk.byteOffset, chunk.byteOffset + (chunk.length & ~1)));
    out.push(new AudioFrame(samples, rate, 1, samples.length));
  }
  return out;
}

/** espeak-ng's speech of `text` (Swahili voice) as 24 kHz 16-bit PCM, the demo voice's format. */
async function espeak24k(text: string): Promise<Buffer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-espeak-'));
  const file = path.join(dir, 'speech.wav');
  execFileSync('espeak-ng', ['-v', 'sw', '-w', file, text]);
  const wav = fs.readFileSync(file);
  fs.rmSync(dir, { recursive: true, force: true });
  const data = wav.indexOf('data');
  const pcm = wav.subarray(data + 8, data + 8 + wav.readUInt32LE(data + 4));
  const samples = Float32Array.from({ length: pcm.length >> 1 }, (_, i) => pcm.readInt16LE(2 * i) / 32768);
  const resampled = await resample(samples, wav.readUInt32LE(24), 24000);
  const out = Buffer.alloc(resampled.length * 2);
  resampled.forEach((v, i) => out.writeInt16LE(Math.max(-32768, Math.min(32767, Math.round(v * 32767))), 2 * i));
  return out;
}

describeClients('@livekit/agents-plugin-openai STT', () => {
  let t: TestServer;
  beforeAll(async () => {
    initializeLogger({ pretty: false, level: 'warn' });
    t = await startRealtimeServer();
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  /**
   * Streams `audio` through the plugin's SpeechStream and returns its events once `done` holds for them.
   * The whole audio goes at once (Kuma takes a minute of audio as a burst, and turns are decided on the
   * audio's own clock, so they are the same as at real-time pace).
   */
  async function run(
    options: Partial<openai.STTOptions>,
    audio: Buffer,
    rate: number,
    done: (events: stt.SpeechEvent[]) => boolean,
  ): Promise<stt.SpeechEvent[]> {
    const plugin = new openai.STT({ baseURL: `${t.baseUrl}/openai/v1`, apiKey: t.apiKey, ...options });
    const errors: unknown[] = [];
    plugin.on('error', (e) => errors.push(e));
    const stream = plugin.stream();
    const events: stt.SpeechEvent[] = [];
    const reading = (async () => {
      for await (const event of stream) events.push(event);
    })();
    for (const frame of frames(audio, rate)) stream.pushFrame(frame);
    await expect
      .poll(() => done(events) || errors.length > 0, { timeout: 30_000 })
      .toBe(true)
      .catch(() => {
        throw new Error(
          `the stream did not finish: ${JSON.stringify(events.map((e) => [stt.SpeechEventType[e.type], e.alternatives?.[0]?.text]))}\n${t.logs.slice(-10).join('')}`,
        );
      });
    stream.close();
    await reading;
    expect(errors).toEqual([]);
    return events;
  }

  const finals = (events: stt.SpeechEvent[]) => events.filter((e) => e.type === stt.SpeechEventType.FINAL_TRANSCRIPT).map((e) => e.alternatives![0]!.text);
  const turns = (events: stt.SpeechEvent[]) => events.filter((e) => e.type === stt.SpeechEventType.RECOGNITION_USAGE).length;
  const vad = (silenceMs: number) =>
    silenceMs === 350 ? {} : { turnDetection: { type: 'server_vad' as const, threshold: 0.5, prefix_padding_ms: 600, silence_duration_ms: silenceMs } };

  for (const silenceMs of [300, 350, 400, 500]) {
    it(`demo voice, silence_duration_ms ${silenceMs}${silenceMs === 350 ? ' (the default)' : ''}: one final per spoken turn, each the phrase exactly`, async () => {
      const speech = await Promise.all(DEMO_PHRASES.map((p) => speak(t, p)));
      const audio = Buffer.concat([silence(0.3), ...speech.flatMap((s) => [s, silence(1.5)])]);
      // Items complete in commit order: once the last phrase's final is in, every earlier turn's is too.
      const events = await run({ model: 'sunjata-1', ...vad(silenceMs) }, audio, 24000, (e) => finals(e).includes(DEMO_PHRASES.at(-1)!));
      expect(finals(events)).toEqual(DEMO_PHRASES);
      expect(turns(events)).toBe(DEMO_PHRASES.length);
    }, 60_000);
  }

  it.skipIf(!hasEspeak)(
    'espeak-ng speech of Bambara text, silence_duration_ms 300–500: one turn per phrase',
    async () => {
      // The demo model cannot read espeak-ng's voice, so a demo phrase spoken after the others marks the end:
      // once its final is in, every turn before it has completed (commit order).
      const spoken = await Promise.all(ESPEAK_PHRASES.map(espeak24k));
      const audio = Buffer.concat([silence(0.3), ...spoken.flatMap((s) => [s, silence(1.5)]), await speak(t, 'i ni ce'), silence(1.5)]);
      for (const silenceMs of [300, 350, 400, 500]) {
        const events = await run({ model: 'sunjata-1', ...vad(silenceMs) }, audio, 24000, (e) => finals(e).includes('i ni ce'));
        expect(turns(events), `silence_duration_ms ${silenceMs}`).toBe(ESPEAK_PHRASES.length + 1);
        expect(finals(events).at(-1)).toBe('i ni ce');
      }
    },
    120_000,
  );

  it.each([
    ['fr', 'fra_Latn'],
    ["en (the plugin's default)", 'eng_Latn'],
  ])(
    'translated transcripts: model banjugu-1, language %s → each final is the translation',
    async (language, target) => {
      const phrases = ['i ni ce', 'an bɛ sini'];
      const expected = await Promise.all(phrases.map((text) => restTranslation(text, target)));
      expect(expected).not.toEqual(phrases);
      const audio = Buffer.concat([silence(0.3), ...(await Promise.all(phrases.map((p) => speak(t, p)))).flatMap((s) => [s, silence(1.5)])]);
      const options = language === 'fr' ? { model: 'banjugu-1', language: 'fr' } : { model: 'banjugu-1' };
      const events = await run(options, audio, 24000, (e) => turns(e) >= phrases.length);
      expect(finals(events)).toEqual(expected);
      const final = events.find((e) => e.type === stt.SpeechEventType.FINAL_TRANSCRIPT)!;
      expect(final.alternatives![0]!.language).toBe(language.slice(0, 2));
    },
    60_000,
  );

  async function restTranslation(text: string, target: string): Promise<string> {
    const res = await fetch(`${t.baseUrl}/openai/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'banjugu-1',
        messages: [{ role: 'user', content: text }],
        djelia: { source_language: 'bam_Latn', target_language: target },
      }),
    });
    return ((await res.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content;
  }
});
