/**
 * Done-means 1: the openai SDK's own realtime client (OpenAIRealtimeWS, over wss with the test CA) runs a
 * transcription session unchanged. Demo TTS speech streamed in 20 ms frames at real-time pace yields
 * speech_started, speech_stopped, at least one delta before completed, and completed == the spoken text —
 * for pcm16 24 kHz, μ-law and A-law, in the GA and the beta session shapes.
 */
import fs from 'node:fs';
import OpenAI from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { appends, silence, speak, startRealtimeServer, type WireFormat } from '../../helpers/realtime.js';
import type { TestServer } from '../../helpers/test-server.js';

const ca = fs.readFileSync('test/fixtures/tls/localhost-cert.pem');
const TEXT = 'i ni ce';
let t: TestServer;

beforeAll(async () => {
  t = await startRealtimeServer({ config: { tlsCert: 'test/fixtures/tls/localhost-cert.pem', tlsKey: 'test/fixtures/tls/localhost-key.pem' } });
}, 60_000);
afterAll(async () => {
  await t?.close();
});

const GA_FORMAT: Record<WireFormat, object> = {
  pcm16: { type: 'audio/pcm', rate: 24000 },
  g711_ulaw: { type: 'audio/pcmu' },
  g711_alaw: { type: 'audio/pcma' },
};
const vad = { type: 'server_vad', threshold: 0.5, prefix_padding_ms: 300, silence_duration_ms: 500 };

const cases: Array<[WireFormat, 'ga' | 'beta']> = (['pcm16', 'g711_ulaw', 'g711_alaw'] as const).flatMap(
  (f) =>
    [
      [f, 'ga'],
      [f, 'beta'],
    ] as Array<[WireFormat, 'ga' | 'beta']>,
);

it.each(cases)(
  '%s, %s session shape: speech_started, speech_stopped, ≥ 1 delta before completed == the spoken text',
  async (format, shape) => {
    const audio = Buffer.concat([silence(0.3, format), await speak(t, TEXT, format, ca), silence(0.8, format)]);
    const client = new OpenAI({ apiKey: t.apiKey, baseURL: `https://127.0.0.1:${t.server.port}/openai/v1` });
    const rt = new OpenAIRealtimeWS({ model: 'sunjata-1', options: { ca } }, client);
    const events: any[] = [];
    const completed = new Promise<any>((resolve, reject) => {
      rt.on('event', (e: any) => {
        events.push(e);
        if (e.type === 'conversation.item.input_audio_transcription.completed') resolve(e);
      });
      rt.on('error', reject);
    });
    await new Promise<void>((resolve, reject) => {
      rt.socket.once('open', () => resolve());
      rt.socket.once('error', reject);
    });
    const updated = new Promise<void>((resolve) => rt.on('event', (e: any) => e.type.endsWith('updated') && resolve()));
    if (shape === 'ga')
      rt.send({
        type: 'session.update',
        session: { type: 'transcription', audio: { input: { format: GA_FORMAT[format], transcription: { model: 'sunjata-1' }, turn_detection: vad } } },
      } as any);
    else
      rt.send({
        type: 'transcription_session.update',
        session: { input_audio_format: format, input_audio_transcription: { model: 'sunjata-1' }, turn_detection: vad },
      } as any);
    await updated;
    // 20 ms frames at real-time pace.
    const frames = appends(audio, format).map((e) => JSON.parse(e));
    const t0 = performance.now();
    for (let i = 0; i < frames.length; i++) {
      const wait = t0 + i * 20 - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      rt.send(frames[i]);
    }
    const done = await completed;
    rt.close();
    const types = events.map((e) => e.type);
    expect(types[0]).toBe('session.created');
    expect(types).toContain(shape === 'ga' ? 'session.updated' : 'transcription_session.updated');
    const started = types.indexOf('input_audio_buffer.speech_started');
    const stopped = types.indexOf('input_audio_buffer.speech_stopped');
    const firstDelta = types.indexOf('conversation.item.input_audio_transcription.delta');
    expect(started).toBeGreaterThan(0);
    expect(stopped).toBeGreaterThan(started);
    expect(firstDelta).toBeGreaterThan(started);
    expect(firstDelta).toBeLessThan(events.indexOf(done));
    expect(done.transcript).toBe(TEXT);
    expect(done.usage).toMatchObject({ type: 'duration' });
  },
  30_000,
);
