/**
 * OpenAI Realtime transcription sessions through a real server and a plain `ws` client: manual commits,
 * clear, server_vad turns (two turns with a pause, in order), a turn longer than 30 s, the idle timeout, and
 * bad client events answered with an `error` event while the session goes on.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appends, gaUpdate, RealtimeClient, silence, speak, startRealtimeServer } from '../../helpers/realtime.js';
import type { TestServer } from '../../helpers/test-server.js';

const COMPLETED = 'conversation.item.input_audio_transcription.completed';
const DELTA = 'conversation.item.input_audio_transcription.delta';
let t: TestServer;

beforeAll(async () => {
  t = await startRealtimeServer({ config: { realtimeMaxMessageBytes: 4096 } });
}, 60_000);
afterAll(async () => {
  await t?.close();
});

/** The deltas of one item joined: what a client that only reads deltas would show. */
const deltasOf = (c: RealtimeClient, itemId: string) =>
  c
    .of(DELTA)
    .filter((e) => e.item_id === itemId)
    .map((e) => e.delta)
    .join('');

describe('manual commits (turn_detection: null)', () => {
  it('commit → committed, at least one delta, then completed with the transcript and its duration', async () => {
    const c = await RealtimeClient.connect(t);
    c.send(gaUpdate({ turn_detection: null }));
    expect((await c.next('session.updated')).session.audio.input.turn_detection).toBeNull();
    const speech = await speak(t, 'i ni ce');
    c.sendAll(appends(speech));
    c.send({ type: 'input_audio_buffer.commit' });
    const committed = await c.next('input_audio_buffer.committed');
    expect(committed.previous_item_id).toBeNull();
    const done = await c.next(COMPLETED);
    expect(done).toMatchObject({ item_id: committed.item_id, content_index: 0, transcript: 'i ni ce', usage: { type: 'duration' } });
    // The seconds committed, as the ledger rounds them (to the ms, up): pcm16 at 24 kHz is 48 bytes a ms.
    expect(done.usage.seconds).toBeCloseTo(speech.length / 48_000, 2);
    expect(deltasOf(c, committed.item_id)).toBe('i ni ce');
    expect(c.events.findIndex((e) => e.type === DELTA)).toBeLessThan(c.events.indexOf(done));
    expect(c.of('input_audio_buffer.speech_started')).toHaveLength(0);
    c.close();
  });

  it('clear drops the buffer: cleared, then a commit has nothing to commit (error) and the session goes on', async () => {
    const c = await RealtimeClient.connect(t);
    c.send(gaUpdate({ turn_detection: null }));
    await c.next('session.updated');
    c.sendAll(appends(await speak(t, 'a ni sogoma')));
    c.send({ type: 'input_audio_buffer.clear' });
    await c.next('input_audio_buffer.cleared');
    c.send({ type: 'input_audio_buffer.commit', event_id: 'evt_empty' });
    expect((await c.next('error')).error).toMatchObject({ type: 'invalid_request_error', code: 'input_audio_buffer_commit_empty', event_id: 'evt_empty' });
    c.sendAll(appends(await speak(t, 'i ni ce')));
    c.send({ type: 'input_audio_buffer.commit' });
    expect((await c.next(COMPLETED)).transcript).toBe('i ni ce');
    expect(c.of('input_audio_buffer.committed')).toHaveLength(1);
    c.close();
  });

  it('a turn longer than 30 s is transcribed whole', async () => {
    const c = await RealtimeClient.connect(t);
    c.send(gaUpdate({ turn_detection: null }));
    await c.next('session.updated');
    const text = Array(14).fill('a ni sogoma i ni ce').join(' ');
    const speech = await speak(t, text);
    expect(speech.length / 48_000).toBeGreaterThan(30);
    c.sendAll(appends(speech));
    c.send({ type: 'input_audio_buffer.commit' });
    const done = await c.next(COMPLETED, 1, () => true, 60_000);
    expect(done.transcript).toBe(text);
    expect(done.usage.seconds).toBeGreaterThan(30);
    c.close();
  }, 90_000);
});

describe('server_vad', () => {
  it('two turns with a pause: speech_started/stopped, committed in order (previous_item_id), completed in commit order', async () => {
    const c = await RealtimeClient.connect(t, 'intent=transcription&model=gpt-4o-transcribe');
    c.send(gaUpdate({ turn_detection: { type: 'server_vad', threshold: 0.5, prefix_padding_ms: 300, silence_duration_ms: 500 } }));
    await c.next('session.updated');
    const audio = Buffer.concat([silence(0.5), await speak(t, 'i ni ce'), silence(1.2), await speak(t, 'a ni sogoma'), silence(1.2)]);
    c.sendAll(appends(audio));
    const second = await c.next(COMPLETED, 2);
    const [first] = c.of(COMPLETED);
    expect([first!.transcript, second.transcript]).toEqual(['i ni ce', 'a ni sogoma']);
    const started = c.of('input_audio_buffer.speech_started');
    const stopped = c.of('input_audio_buffer.speech_stopped');
    const committed = c.of('input_audio_buffer.committed');
    expect(started.map((e) => e.item_id)).toEqual([first!.item_id, second.item_id]);
    expect(stopped.map((e) => e.item_id)).toEqual([first!.item_id, second.item_id]);
    expect(committed.map((e) => [e.item_id, e.previous_item_id])).toEqual([
      [first!.item_id, null],
      [second.item_id, first!.item_id],
    ]);
    // Times in the session's audio clock: the turns are in order and inside the audio sent.
    const times = [started[0]!.audio_start_ms, stopped[0]!.audio_end_ms, started[1]!.audio_start_ms, stopped[1]!.audio_end_ms];
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    expect(times[3]).toBeLessThanOrEqual(audio.length / 48);
    for (const done of [first!, second]) expect(deltasOf(c, done.item_id)).toBe(done.transcript);
    c.close();
  });

  it('idle_timeout_ms: silence past it triggers timeout_triggered and commits that audio as an item, which is free (silence is never billed)', async () => {
    const account = await t.newAccount(10_000_000);
    const c = await RealtimeClient.connect(t, 'intent=transcription', { apiKey: account.apiKey });
    c.send(gaUpdate({ turn_detection: { type: 'server_vad', idle_timeout_ms: 1000 } }));
    await c.next('session.updated');
    c.sendAll(appends(silence(1.5)));
    const timeout = await c.next('input_audio_buffer.timeout_triggered');
    expect(timeout.audio_end_ms - timeout.audio_start_ms).toBeGreaterThanOrEqual(1000);
    expect((await c.next('input_audio_buffer.committed')).item_id).toBe(timeout.item_id);
    const done = await c.next(COMPLETED);
    expect(done).toMatchObject({ item_id: timeout.item_id, transcript: '', usage: { type: 'duration', seconds: 0 } });
    expect(c.of('input_audio_buffer.speech_started')).toHaveLength(0);
    c.close();
    await c.closed;
    for (let i = 0; i < 100 && t.server.ledger.openReservations > 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(await t.server.store.listUsage({ accountId: account.accountId })).toEqual([]);
  });
});

describe('bad client events get an error event and the session goes on', () => {
  it('audio before a model is configured, non-JSON, unknown type, bad base64, oversize, binary, unsupported format', async () => {
    const c = await RealtimeClient.connect(t);
    const cases: Array<[string | Buffer, string]> = [
      [JSON.stringify({ type: 'input_audio_buffer.append', event_id: 'e1', audio: 'AAAA' }), 'session_not_configured'],
      ['{"type": "input_audio_buffer.append", ', 'invalid_json'],
      [JSON.stringify({ type: 'response.create', event_id: 'e3' }), 'unknown_event_type'],
      [JSON.stringify({ type: 'input_audio_buffer.append', event_id: 'e4', audio: 'not base64!' }), 'invalid_value'],
      [JSON.stringify({ type: 'input_audio_buffer.append', audio: 'A'.repeat(8192) }), 'request_too_large'],
      [Buffer.from([1, 2, 3]), 'invalid_value'],
      [JSON.stringify(gaUpdate({ format: { type: 'audio/pcm', rate: 44100 } }, { event_id: 'e7' })), 'unsupported_audio_format'],
      [JSON.stringify(gaUpdate({ transcription: { model: 'tts-1' } }, { event_id: 'e8' })), 'invalid_value'],
    ];
    for (const [i, [frame, code]] of cases.entries()) {
      c.send(frame);
      expect((await c.next('error', i + 1)).error, `case ${i}`).toMatchObject({ type: 'invalid_request_error', code });
    }
    expect(c.of('error').map((e) => e.error.event_id)).toEqual(['e1', null, 'e3', 'e4', null, null, 'e7', 'e8']);
    // Still serving: configure, speak, commit.
    c.send(gaUpdate({ turn_detection: null }));
    await c.next('session.updated');
    c.sendAll(appends(await speak(t, 'i ni ce')));
    c.send({ type: 'input_audio_buffer.commit' });
    expect((await c.next(COMPLETED)).transcript).toBe('i ni ce');
    c.close();
  });

  it('audio sent right behind an update that changes the format (it waits for the new decoder) is heard as sent', async () => {
    const c = await RealtimeClient.connect(t);
    // Not waiting for session.updated: the appends queue in the session while its decoder is made.
    c.send(gaUpdate({ format: { type: 'audio/pcmu' }, turn_detection: null }));
    c.sendAll(appends(await speak(t, 'an bɛ sini', 'g711_ulaw'), 'g711_ulaw'));
    c.send({ type: 'input_audio_buffer.commit' });
    expect((await c.next(COMPLETED)).transcript).toBe('an bɛ sini');
    expect(c.of('error')).toEqual([]);
    c.close();
  });

  it('audio split anywhere, odd byte counts included, transcribes the same', async () => {
    const c = await RealtimeClient.connect(t);
    c.send(gaUpdate({ turn_detection: null }));
    await c.next('session.updated');
    const speech = await speak(t, 'a ni sogoma');
    for (let i = 0, n = 1; i < speech.length; i += n, n = (n * 7 + 3) % 997 || 1) {
      c.send({ type: 'input_audio_buffer.append', audio: speech.subarray(i, i + n).toString('base64') });
    }
    c.send({ type: 'input_audio_buffer.commit' });
    expect((await c.next(COMPLETED)).transcript).toBe('a ni sogoma');
    c.close();
  });
});
