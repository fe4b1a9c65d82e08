/**
 * Realtime input faster than real time (README "Realtime", input rate): silence streamed at 60× real time
 * into a server_vad session is never committed nor charged — appends beyond the input rate bound are
 * refused with an `error` event naming the refused append, the audio taken is scored by the VAD before
 * anything is committed, and the session goes on to transcribe (and charge) the speech that follows.
 *
 * Before the bound, the VAD (which scores at most 0.5 s of a session's audio per 32 ms tick, ≈ 15× real
 * time) fell behind, the uncommitted buffer passed KUMA_REALTIME_MAX_BUFFER_SECONDS, and that unscored
 * silence was committed as items and charged (30 min at 60× was charged 1,742.85 s).
 *
 * KUMA_TEST_SILENCE_SECONDS sets the silence's length (default 150 s, sent in 2.5 s; 1800 for the 30 min
 * of the report, sent in 30 s).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appends, gaUpdate, RealtimeClient, silence, speak, startRealtimeServer } from '../../helpers/realtime.js';
import type { TestServer } from '../../helpers/test-server.js';

const COMPLETED = 'conversation.item.input_audio_transcription.completed';
const SILENCE_SECONDS = Number(process.env.KUMA_TEST_SILENCE_SECONDS ?? 150);
const SPEEDUP = 60;
let t: TestServer;

beforeAll(async () => {
  t = await startRealtimeServer();
}, 60_000);
afterAll(async () => {
  await t?.close();
});

/** Appends of `frameMs` each, with event ids, sent `speedup` times faster than real time. */
async function stream(c: RealtimeClient, audio: Buffer, frameMs: number, speedup: number, idPrefix: string): Promise<string[]> {
  const frameBytes = 48 * frameMs; // pcm16 at 24 kHz: 48 bytes a millisecond
  const ids: string[] = [];
  const t0 = performance.now();
  for (let i = 0, n = 0; i < audio.length; i += frameBytes, n++) {
    const due = t0 + (n * frameMs) / speedup - performance.now();
    if (due > 1) await new Promise((r) => setTimeout(r, due));
    const id = `${idPrefix}${n}`;
    ids.push(id);
    c.send({ type: 'input_audio_buffer.append', event_id: id, audio: audio.subarray(i, i + frameBytes).toString('base64') });
  }
  return ids;
}

describe('input faster than real time', () => {
  it(
    `${SILENCE_SECONDS} s of silence at ${SPEEDUP}× real time: nothing committed, nothing charged; the appends over the bound get an error each`,
    async () => {
      const account = await t.newAccount(100_000_000);
      const c = await RealtimeClient.connect(t, 'intent=transcription', { apiKey: account.apiKey });
      c.send(gaUpdate({ turn_detection: { type: 'server_vad', threshold: 0.5, prefix_padding_ms: 300, silence_duration_ms: 500 } }));
      await c.next('session.updated');
      const sent = await stream(c, silence(SILENCE_SECONDS), 100, SPEEDUP, 'silence_');

      // Then speech at real-time pace. Items are committed and completed in order, and the VAD scores audio
      // in order: once this turn's transcript is out, every earlier piece of audio has been scored.
      const speech = Buffer.concat([await speak(t, 'i ni ce'), silence(1.2)]);
      await c.pace(appends(speech));
      const done = await c.next(COMPLETED, 1, (e) => e.transcript !== '', 60_000);
      expect(done.transcript).toBe('i ni ce');

      // The only item is the speech: no silence was committed, whatever the rate it came at.
      expect(c.of('input_audio_buffer.committed').map((e) => e.item_id)).toEqual([done.item_id]);
      const refused = c.of('error');
      expect(refused.length).toBeGreaterThan(0);
      for (const e of refused) expect(e.error).toMatchObject({ type: 'invalid_request_error', code: 'input_audio_rate_exceeded' });
      // Each refusal names an append of the flood (so a client knows exactly what to send again).
      expect(refused.every((e) => sent.includes(e.error.event_id))).toBe(true);

      c.close();
      await c.closed;
      for (let i = 0; i < 100 && t.server.ledger.openReservations > 0; i++) await new Promise((r) => setTimeout(r, 20));
      const rows = await t.server.store.listUsage({ accountId: account.accountId });
      // One row: the speech turn's seconds. None for the silence.
      expect(rows.map((r) => r.quantity)).toEqual([done.usage.seconds]);
      expect(done.usage.seconds).toBeLessThan(speech.length / 48_000 + 1);
    },
    120_000 + SILENCE_SECONDS * 40,
  );
});
