/**
 * GA conversation events in a transcription session, through a plain `ws` client: each committed buffer is
 * a user audio item announced by conversation.item.added and .done (after input_audio_buffer.committed, with
 * previous_item_id), conversation.item.retrieve answers conversation.item.retrieved with the item's transcript
 * (null before it is known), an unknown id gets the `item_retrieve_invalid_item_id` error and the session goes
 * on; a `type: "realtime"` session.update applies what transcribes (format, model, language, turn detection,
 * semantic_vad as server_vad) and ignores the conversation settings, without an error.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appends, RealtimeClient, silence, speak, startRealtimeServer } from '../../helpers/realtime.js';
import type { TestServer } from '../../helpers/test-server.js';

const COMPLETED = 'conversation.item.input_audio_transcription.completed';
let t: TestServer;

beforeAll(async () => {
  t = await startRealtimeServer();
}, 60_000);
afterAll(async () => {
  await t?.close();
});

/** What the OpenAI Agents SDK sends: a conversation session's whole configuration. */
const realtimeUpdate = (input: Record<string, unknown>) => ({
  type: 'session.update',
  session: {
    type: 'realtime',
    model: 'gpt-realtime',
    instructions: 'Be brief.',
    output_modalities: ['audio'],
    audio: { input: { noise_reduction: null, ...input }, output: { format: { type: 'audio/pcm', rate: 24000 }, voice: 'alloy', speed: 1 } },
    tool_choice: 'auto',
    tools: [{ type: 'function', name: 'lookup', description: 'd', parameters: { type: 'object', properties: {} } }],
    prompt: { id: 'pmpt_1', version: '2' },
    tracing: 'auto',
  },
});

describe('conversation items', () => {
  it('added and done follow committed; retrieve answers the transcript; an unknown id is an error and the session goes on', async () => {
    const c = await RealtimeClient.connect(t);
    c.send(realtimeUpdate({ transcription: { model: 'sunjata-1' }, turn_detection: null }));
    const updated = await c.next('session.updated');
    expect(updated.session.audio.input).toMatchObject({ transcription: { model: 'sunjata-1' }, turn_detection: null });
    for (const text of ['i ni ce', 'an bɛ sini']) {
      c.sendAll(appends(await speak(t, text)));
      c.send({ type: 'input_audio_buffer.commit' });
    }
    const first = await c.next('input_audio_buffer.committed');
    const second = await c.next('input_audio_buffer.committed', 2);
    const item = (id: string, transcript: string | null) => ({
      id,
      object: 'realtime.item',
      type: 'message',
      status: 'completed',
      role: 'user',
      content: [{ type: 'input_audio', transcript }],
    });
    expect(await c.next('conversation.item.added')).toMatchObject({ previous_item_id: null, item: item(first.item_id, null) });
    expect(await c.next('conversation.item.done')).toMatchObject({ previous_item_id: null, item: item(first.item_id, null) });
    expect(await c.next('conversation.item.added', 2)).toMatchObject({ previous_item_id: first.item_id, item: item(second.item_id, null) });
    expect(await c.next('conversation.item.done', 2)).toMatchObject({ previous_item_id: first.item_id, item: item(second.item_id, null) });
    // In order: committed, added, done, for each item.
    const order = c.events.map((e) => `${e.type}:${e.item_id ?? e.item?.id}`);
    expect(order.indexOf(`input_audio_buffer.committed:${first.item_id}`)).toBeLessThan(order.indexOf(`conversation.item.added:${first.item_id}`));
    expect(order.indexOf(`conversation.item.added:${first.item_id}`)).toBeLessThan(order.indexOf(`conversation.item.done:${first.item_id}`));

    await c.next(COMPLETED, 2);
    c.send({ type: 'conversation.item.retrieve', item_id: second.item_id, event_id: 'r1' });
    expect(await c.next('conversation.item.retrieved')).toMatchObject({ item: item(second.item_id, 'an bɛ sini') });
    c.send({ type: 'conversation.item.retrieve', item_id: 'item_nope', event_id: 'r2' });
    expect(await c.next('error')).toMatchObject({
      error: { type: 'invalid_request_error', code: 'item_retrieve_invalid_item_id', param: 'item_id', event_id: 'r2' },
    });
    c.send({ type: 'conversation.item.retrieve', item_id: first.item_id });
    expect(await c.next('conversation.item.retrieved', 2)).toMatchObject({ item: item(first.item_id, 'i ni ce') });
    c.send({ type: 'conversation.item.retrieve', event_id: 'r3' });
    expect(await c.next('error', 2)).toMatchObject({ error: { code: 'invalid_value', param: 'item_id', event_id: 'r3' } });
    expect(c.of('error')).toHaveLength(2);
    c.close();
  });

  it('a retrieve before the transcript is known answers the item with transcript null', async () => {
    const c = await RealtimeClient.connect(t);
    c.send({ type: 'session.update', session: { type: 'transcription', audio: { input: { transcription: { model: 'sunjata-1' }, turn_detection: null } } } });
    await c.next('session.updated');
    c.sendAll(appends(await speak(t, 'i ni ce')));
    c.send({ type: 'input_audio_buffer.commit' });
    const committed = await c.next('input_audio_buffer.committed');
    c.send({ type: 'conversation.item.retrieve', item_id: committed.item_id });
    const retrieved = await c.next('conversation.item.retrieved');
    const completedAt = c.events.findIndex((e) => e.type === COMPLETED);
    // Answered at once: unless the transcript was already delivered, the answer has none yet.
    expect(retrieved.item.content[0].transcript).toBe(completedAt >= 0 && completedAt < c.events.indexOf(retrieved) ? 'i ni ce' : null);
    await c.next(COMPLETED);
    c.close();
  });
});

describe('a type "realtime" session.update on a transcription session', () => {
  it('applies format, model, language and server_vad; semantic_vad is server_vad at its defaults; conversation settings are ignored, without an error', async () => {
    const c = await RealtimeClient.connect(t);
    c.send(
      realtimeUpdate({
        format: { type: 'audio/pcmu' },
        transcription: { model: 'gpt-4o-mini-transcribe', language: 'bm' },
        turn_detection: {
          type: 'server_vad',
          threshold: 0.6,
          prefix_padding_ms: 200,
          silence_duration_ms: 400,
          create_response: true,
          interrupt_response: true,
        },
      }),
    );
    const first = await c.next('session.updated');
    expect(first.session).toMatchObject({
      type: 'transcription',
      audio: {
        input: {
          format: { type: 'audio/pcmu' },
          transcription: { model: 'sunjata-1', language: 'bm' },
          turn_detection: { type: 'server_vad', threshold: 0.6, prefix_padding_ms: 200, silence_duration_ms: 400 },
        },
      },
    });
    c.send(realtimeUpdate({ turn_detection: { type: 'semantic_vad', eagerness: 'high' } }));
    const second = await c.next('session.updated', 2);
    expect(second.session.audio.input.turn_detection).toMatchObject({ type: 'server_vad', threshold: 0.5, prefix_padding_ms: 300, silence_duration_ms: 500 });
    c.send({ type: 'session.update', session: { type: 'realtime', tracing: 'auto' } });
    await c.next('session.updated', 3);
    // The configured μ-law session transcribes a VAD turn.
    c.sendAll(appends(Buffer.concat([silence(0.3, 'g711_ulaw'), await speak(t, 'i ni ce', 'g711_ulaw'), silence(1, 'g711_ulaw')]), 'g711_ulaw'));
    expect((await c.next(COMPLETED)).transcript).toBe('i ni ce');
    expect(c.of('error')).toEqual([]);
    c.close();
  });
});
