/**
 * Realtime translation sessions: Bambara speech in, per turn the Bambara transcript (as append-only
 * `session.input_transcript.delta`s) and its French or English translation (`session.output_transcript.delta`),
 * the same text the REST translation of that transcript gives; usage per turn equal to the ledger's rows;
 * `session.close` finishes and answers `session.closed`. A transcription session whose language is a
 * translation target delivers translations as its transcripts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appends, gaUpdate, RealtimeClient, silence, speak, startRealtimeServer } from '../../helpers/realtime.js';
import type { TestServer } from '../../helpers/test-server.js';

let t: TestServer;
beforeAll(async () => {
  t = await startRealtimeServer();
}, 60_000);
afterAll(async () => {
  await t?.close();
});

async function restTranslation(text: string, target: string): Promise<string> {
  const res = await fetch(`${t.baseUrl}/openai/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'banjugu-1', messages: [{ role: 'user', content: text }], djelia: { source_language: 'bam_Latn', target_language: target } }),
  });
  return ((await res.json()) as any).choices[0].message.content;
}

describe('translation sessions', () => {
  it.each([
    ['intent=translation&language=fra_Latn', 'fra_Latn'],
    ['model=banjugu-1', 'eng_Latn'],
  ])('%s: two turns → Bambara transcript and %s translation of each, usage == rows, session.close → session.closed', async (query, target) => {
    const account = await t.newAccount(10_000_000);
    const c = await RealtimeClient.connect(t, query, { apiKey: account.apiKey });
    expect(c.events[0]!.session).toMatchObject({ type: 'translation', audio: { output: { language: target } } });
    const turns = ['i ni ce', 'a ni sogoma'];
    const audio = Buffer.concat([silence(0.4), await speak(t, turns[0]!), silence(1), await speak(t, turns[1]!), silence(1)]);
    c.sendAll(appends(audio, 'pcm16', 'session.input_audio_buffer.append'));
    await c.next('session.turn.completed', 2).catch(async (err) => {
      throw new Error(`${err.message} ${JSON.stringify(await c.closed)}\n${t.logs.slice(-15).join('\n')}`);
    });
    c.send({ type: 'session.close' });
    await c.next('session.closed');
    expect((await c.closed).code).toBe(1000);

    const expected = await Promise.all(turns.map((text) => restTranslation(text, target)));
    expect(c.of('session.turn.completed').map((e) => [e.transcript, e.translation])).toEqual(turns.map((text, i) => [text, expected[i]]));
    // Append-only across the session: the deltas concatenate to the turns, space-separated.
    expect(
      c
        .of('session.input_transcript.delta')
        .map((e) => e.delta)
        .join(''),
    ).toBe(turns.join(' '));
    expect(
      c
        .of('session.output_transcript.delta')
        .map((e) => e.delta)
        .join(''),
    ).toBe(expected.join(' '));
    expect(c.of('error')).toEqual([]);

    const rows = await t.server.store.listUsage({ accountId: account.accountId });
    const reported = c.of('session.turn.completed').flatMap((e) => [
      ['sunjata-1', 'second', e.usage.seconds],
      ['banjugu-1', 'character', e.usage.translation_characters],
    ]);
    expect(rows.map((r) => [r.model, r.unit, r.quantity])).toEqual(reported);
    expect(c.of('session.turn.completed').map((e) => e.usage.translation_characters)).toEqual(turns.map((text) => [...text].length));
  });
});

it('a GA transcription session with language fra_Latn: completed carries the translation, source_transcript the Bambara', async () => {
  const c = await RealtimeClient.connect(t);
  c.send(gaUpdate({ transcription: { model: 'sunjata-1', language: 'fra_Latn' }, turn_detection: null }));
  await c.next('session.updated');
  c.sendAll(appends(await speak(t, 'i ni ce')));
  c.send({ type: 'input_audio_buffer.commit' });
  const done = await c.next('conversation.item.input_audio_transcription.completed');
  const french = await restTranslation('i ni ce', 'fra_Latn');
  expect(done).toMatchObject({
    transcript: french,
    source_transcript: 'i ni ce',
    language: 'fra_Latn',
    usage: { type: 'duration', translation_characters: 7 },
  });
  expect(
    c
      .of('conversation.item.input_audio_transcription.delta')
      .map((e) => e.delta)
      .join(''),
  ).toBe(french);
  c.close();
});

it('the translation model named as the transcription model (LiveKit): ?intent=transcription&model=banjugu-1, ISO fr/en name the target', async () => {
  const c = await RealtimeClient.connect(t, 'intent=transcription&model=banjugu-1');
  // A transcription session (GA events), translating into English until told otherwise.
  expect(c.events[0]!.session).toMatchObject({ type: 'transcription', audio: { input: { transcription: { model: 'banjugu-1' } } } });
  c.send(gaUpdate({ transcription: { model: 'banjugu-1', language: 'de' }, turn_detection: null }, { event_id: 'de' }));
  expect(await c.next('error')).toMatchObject({ error: { code: 'invalid_value', param: 'session.audio.input.transcription.language', event_id: 'de' } });
  c.send(gaUpdate({ transcription: { model: 'banjugu-1', language: 'fr' }, turn_detection: null }));
  expect((await c.next('session.updated')).session.audio.input.transcription).toMatchObject({ model: 'banjugu-1', language: 'fr' });
  const speech = await speak(t, 'i ni ce');
  c.sendAll(appends(speech));
  c.send({ type: 'input_audio_buffer.commit' });
  const french = await restTranslation('i ni ce', 'fra_Latn');
  expect(await c.next('conversation.item.input_audio_transcription.completed')).toMatchObject({
    transcript: french,
    source_transcript: 'i ni ce',
    language: 'fra_Latn',
  });
  // Naming a speech model again: Bambara transcripts (ISO `fr` is a source hint again).
  c.send(gaUpdate({ transcription: { model: 'sunjata-1', language: 'fr' }, turn_detection: null }));
  await c.next('session.updated', 2);
  c.sendAll(appends(speech));
  c.send({ type: 'input_audio_buffer.commit' });
  const plain = await c.next('conversation.item.input_audio_transcription.completed', 2);
  expect(plain.transcript).toBe('i ni ce');
  expect(plain.source_transcript).toBeUndefined();
  expect(c.of('error')).toHaveLength(1);
  c.close();
});
