/**
 * Interim text is a courtesy the server drops when it is too busy (KUMA_REALTIME_INTERIM_MAX_CPU, gated on the
 * server process's own CPU share); the client is told, with the Kuma event `session.interims`, so a page can
 * say why no text forms while a turn is spoken. Here the gate is shut (0 = never): the session hears
 * `{paused: true, reason: "server_busy"}` during its turn, and the turn's final transcript still comes.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { appends, gaUpdate, RealtimeClient, silence, speak, startRealtimeServer } from '../../helpers/realtime.js';
import type { TestServer } from '../../helpers/test-server.js';

let t: TestServer;
beforeAll(async () => {
  t = await startRealtimeServer({ config: { realtimeInterimMaxCpu: 0 } });
}, 60_000);
afterAll(async () => {
  await t?.close();
});

it('a busy server tells the session that interims are paused, once, and the final still comes', async () => {
  const c = await RealtimeClient.connect(t);
  c.send(gaUpdate({ turn_detection: { type: 'server_vad', threshold: 0.5, prefix_padding_ms: 300, silence_duration_ms: 500 } }));
  await c.next('session.updated');
  const speech = await speak(t, 'i ni ce, i ka kɛnɛ wa? n bɛ taa');
  await c.pace(appends(Buffer.concat([silence(0.5), speech, silence(1.5)])));
  const done = await c.next('conversation.item.input_audio_transcription.completed');
  expect(done.transcript).toBe('i ni ce i ka kɛnɛ wa n bɛ taa');
  const notices = c.of('session.interims');
  expect(notices).toEqual([expect.objectContaining({ type: 'session.interims', paused: true, reason: 'server_busy' })]);
  // Told while the turn was spoken, before its transcript.
  expect(c.events.indexOf(notices[0]!)).toBeLessThan(c.events.indexOf(done));
  expect(c.events.indexOf(notices[0]!)).toBeGreaterThan(c.events.findIndex((e) => e.type === 'input_audio_buffer.speech_started'));
  c.close();
}, 60_000);
