/**
 * The OpenAI Agents SDK's RealtimeSession (@openai/agents-realtime), unchanged and at its defaults, over its
 * WebSocket transport against Kuma's realtime route. The SDK always sends `session.update` with
 * `type: "realtime"` (a conversation session: instructions, voice, output audio, tools, semantic_vad and
 * gpt-4o-mini-transcribe), a tracing update, and `conversation.item.retrieve` after each transcript; it
 * builds `history` from conversation.item.added/done/retrieved. A transcription session takes what applies
 * and answers each of them: 0 error events, and each spoken phrase is a user item whose transcript is the
 * phrase exactly.
 */
import { RealtimeAgent, RealtimeSession, type RealtimeItem } from '@openai/agents-realtime';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { silence, speak, startRealtimeServer } from '../helpers/realtime.js';
import type { TestServer } from '../helpers/test-server.js';
import { wsUrl } from '../helpers/websocket-client.js';
import { describeClients } from './installed.js';

const PHRASES = ['i ni ce', 'an bɛ sini'];

describeClients('@openai/agents-realtime RealtimeSession', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startRealtimeServer();
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  const userTranscripts = (history: RealtimeItem[]) =>
    history.flatMap((item) =>
      item.type === 'message' && item.role === 'user' ? item.content.map((c) => (c.type === 'input_audio' ? c.transcript : null)) : [],
    );

  for (const prefix of ['/openai/v1', '/compat/v1']) {
    it(`${prefix}: a transcription session at the SDK's defaults: 0 error events, history holds each transcript`, async () => {
      const session = new RealtimeSession(new RealtimeAgent({ name: 'listener', instructions: 'Transcribe.' }), { transport: 'websocket' });
      const errors: unknown[] = [];
      const serverEvents: Array<{ type: string }> = [];
      session.on('error', (e) => errors.push(e));
      session.on('transport_event', (e) => serverEvents.push(e as { type: string }));
      await session.connect({ apiKey: t.apiKey, url: wsUrl(t.baseUrl, `${prefix}/realtime?intent=transcription`) });

      // Two phrases, each followed by a second of silence, in 20 ms frames at real-time pace, as a microphone sends them.
      const audio = Buffer.concat([silence(0.3), ...(await Promise.all(PHRASES.map((p) => speak(t, p)))).flatMap((speech) => [speech, silence(1)])]);
      const t0 = performance.now();
      for (let i = 0, n = 0; i < audio.length; i += 960, n++) {
        const wait = t0 + n * 20 - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        const frame = audio.subarray(i, i + 960);
        session.sendAudio(frame.buffer.slice(frame.byteOffset, frame.byteOffset + frame.length) as ArrayBuffer);
      }
      // Each item is retrieved by the SDK after its transcript: the last answer is what history settles on.
      await expect.poll(() => serverEvents.filter((e) => e.type === 'conversation.item.retrieved').length, { timeout: 20_000 }).toBe(PHRASES.length);
      session.close();

      expect(errors).toEqual([]);
      expect(serverEvents.filter((e) => e.type === 'error')).toEqual([]);
      expect(userTranscripts(session.history)).toEqual(PHRASES);
      const types = serverEvents.map((e) => e.type);
      expect(types.filter((type) => type === 'session.updated').length).toBeGreaterThanOrEqual(2); // the tracing update and the session config
      for (const type of ['conversation.item.added', 'conversation.item.done', 'conversation.item.input_audio_transcription.completed']) {
        expect(types.filter((x) => x === type)).toHaveLength(PHRASES.length);
      }
    }, 60_000);
  }
});
