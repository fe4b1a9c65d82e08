/**
 * The ElevenLabs JS SDK, unchanged, pointed at Kuma by `baseUrl` (it adds `v1/…` itself, so Kuma's
 * /compat prefix is the base): `textToSpeech.convert` and `textToSpeech.stream` speak Bambara that Kuma's
 * own /compat/v1/audio/transcriptions hears back exactly — at ElevenLabs' default output format
 * (mp3_44100_128, an MP3 at 44.1 kHz) and at resampled PCM rates — with ElevenLabs' default model and a
 * voice id of theirs.
 */
import { ElevenLabsClient } from '@elevenlabs/elevenlabs-js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { decodeAudio } from '../../src/codecs/decode/decode-audio.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { wavOfPcm16 } from '../helpers/audio.js';
import { describeClients } from './installed.js';

const TEXT = 'i ni ce. a ka kɛnɛ wa?';
const words = (s: string) =>
  s
    .replace(/[.?,!]/g, '')
    .trim()
    .split(/\s+/)
    .join(' ');
const VOICE = '21m00Tcm4TlvDq8ikWAM'; // an ElevenLabs voice id: Kuma speaks it with the model's default voice

let t: TestServer;

describeClients('ElevenLabs JS SDK REST text to speech against Kuma', () => {
  beforeAll(async () => {
    t = await startTestServer({ clock: () => new Date('2026-09-01T00:00:00Z'), config: { modelsManifest: 'models/kuma-models.json', demoPack: false } });
    await t.server.enginesReady;
  }, 120_000);
  afterAll(() => t?.close());

  const client = () => new ElevenLabsClient({ apiKey: t.apiKey, baseUrl: `${t.baseUrl}/compat` });

  async function bytesOf(stream: ReadableStream<Uint8Array>): Promise<Buffer> {
    const parts: Uint8Array[] = [];
    for await (const part of stream) parts.push(part);
    return Buffer.concat(parts);
  }

  async function transcribe(file: Buffer, name: string): Promise<string> {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(file)]), name);
    form.append('model', 'sunjata-1');
    form.append('response_format', 'text');
    const res = await fetch(`${t.baseUrl}/compat/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${t.apiKey}` }, body: form });
    expect(res.status).toBe(200);
    return (await res.text()).trim();
  }

  it('convert() at the default format: an MP3 at 44.1 kHz that transcribes back exactly', async () => {
    const mp3 = await bytesOf(await client().textToSpeech.convert(VOICE, { text: TEXT, modelId: 'eleven_multilingual_v2' }));
    const decoded = await decodeAudio(mp3, { targetRate: 16000 });
    expect([decoded.container, decoded.sourceSampleRate]).toEqual(['mp3', 44100]);
    expect(await transcribe(mp3, 'speech.mp3')).toBe(words(TEXT));
  });

  it.each([
    ['pcm_16000', 16000],
    ['pcm_22050', 22050],
    ['pcm_44100', 44100],
  ] as const)('stream() with output_format %s: headerless PCM at that rate that transcribes back exactly', async (outputFormat, rate) => {
    const pcm = await bytesOf(await client().textToSpeech.stream(VOICE, { text: TEXT, outputFormat }));
    expect(pcm.length / 2 / rate).toBeGreaterThan(1);
    expect(await transcribe(wavOfPcm16(pcm, rate), 'speech.wav')).toBe(words(TEXT));
  });

  it('stream() with mp3_22050_32: an MP3 at 22.05 kHz that transcribes back exactly', async () => {
    const mp3 = await bytesOf(await client().textToSpeech.stream(VOICE, { text: TEXT, outputFormat: 'mp3_22050_32' }));
    expect((await decodeAudio(mp3, { targetRate: 16000 })).sourceSampleRate).toBe(22050);
    expect(await transcribe(mp3, 'speech.mp3')).toBe(words(TEXT));
  });
});
