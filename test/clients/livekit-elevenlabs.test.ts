/**
 * LiveKit's ElevenLabs TTS plugin, unchanged and at its default settings (model eleven_turbo_v2_5, its
 * default ElevenLabs voice id, pcm_22050, auto mode), pointed at Kuma by its `baseURL` and `apiKey` options
 * only: its streaming path (`stream()`, over multi-stream-input) and its one-shot path (`synthesize()`, over
 * POST /text-to-speech/{voice_id}/stream) both speak Bambara that Kuma's own
 * /compat/v1/audio/transcriptions hears back exactly (the demo round trip: the demo voice speaks the demo
 * ASR's alphabet), at the 22,050 Hz the plugin expects.
 */
import { initializeLogger } from '@livekit/agents';
import { TTS } from '@livekit/agents-plugin-elevenlabs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { wavOfPcm16 } from '../helpers/audio.js';
import { describeClients } from './installed.js';

const TEXT = 'i ni ce. a ka kɛnɛ wa? tɔgɔ ye musa ye.';
const words = (s: string) =>
  s
    .replace(/[.?,!]/g, '')
    .trim()
    .split(/\s+/)
    .join(' ');

let t: TestServer;

describeClients('LiveKit ElevenLabs TTS plugin against Kuma', () => {
  beforeAll(async () => {
    initializeLogger({ pretty: false, level: 'warn' });
    t = await startTestServer({ clock: () => new Date('2026-09-01T00:00:00Z'), config: { modelsManifest: 'models/kuma-models.json', demoPack: false } });
    await t.server.enginesReady;
  }, 120_000);
  afterAll(() => t?.close());

  const tts = () => new TTS({ apiKey: t.apiKey, baseURL: `${t.baseUrl}/compat/v1` });

  /** What Kuma's REST transcription hears in 16-bit PCM at `rate`. */
  async function transcribe(pcm: Buffer, rate: number): Promise<string> {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(wavOfPcm16(pcm, rate))], { type: 'audio/wav' }), 'speech.wav');
    form.append('model', 'sunjata-1');
    form.append('response_format', 'text');
    const res = await fetch(`${t.baseUrl}/compat/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${t.apiKey}` }, body: form });
    expect(res.status).toBe(200);
    return (await res.text()).trim();
  }

  /** The frames' samples as s16le bytes, and their rate (the same for every frame). */
  function pcmOf(frames: Array<{ data: Int16Array; sampleRate: number }>): { pcm: Buffer; rates: number[] } {
    const pcm = Buffer.concat(frames.map((f) => Buffer.from(f.data.buffer, f.data.byteOffset, f.data.byteLength)));
    return { pcm, rates: [...new Set(frames.map((f) => f.sampleRate))] };
  }

  it('stream(): text pushed in pieces is spoken over multi-stream-input and transcribes back exactly', async () => {
    const engine = tts();
    expect(engine.sampleRate).toBe(22050);
    const stream = engine.stream();
    const frames: Array<{ data: Int16Array; sampleRate: number }> = [];
    const reading = (async () => {
      for await (const event of stream) {
        if (typeof event === 'object' && 'frame' in event) frames.push(event.frame);
      }
    })();
    for (const piece of TEXT.split(/(?<= )/)) stream.pushText(piece);
    stream.endInput();
    await reading;
    stream.close();
    await engine.close();
    const { pcm, rates } = pcmOf(frames);
    expect(rates).toEqual([22050]);
    expect(pcm.length / 2 / 22050).toBeGreaterThan(1);
    expect(await transcribe(pcm, 22050)).toBe(words(TEXT));
  });

  it('stream() twice on one TTS: the second context on the same socket transcribes too', async () => {
    const engine = tts();
    for (const text of ['i ni ce.', 'a ka kɛnɛ wa?']) {
      const stream = engine.stream();
      const frames: Array<{ data: Int16Array; sampleRate: number }> = [];
      const reading = (async () => {
        for await (const event of stream) if (typeof event === 'object' && 'frame' in event) frames.push(event.frame);
      })();
      stream.pushText(text);
      stream.endInput();
      await reading;
      stream.close();
      expect(await transcribe(pcmOf(frames).pcm, 22050)).toBe(words(text));
    }
    await engine.close();
  });

  it('synthesize(): the REST streaming path speaks the text at 22,050 Hz and transcribes back exactly', async () => {
    const engine = tts();
    const frames: Array<{ data: Int16Array; sampleRate: number }> = [];
    for await (const audio of engine.synthesize(TEXT)) frames.push(audio.frame);
    await engine.close();
    const { pcm, rates } = pcmOf(frames);
    expect(rates).toEqual([22050]);
    expect(await transcribe(pcm, 22050)).toBe(words(TEXT));
  });
});
