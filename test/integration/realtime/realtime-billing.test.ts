/**
 * Realtime metering through a real server: each delivered item writes usage rows equal to the usage its
 * completed event reported; audio not committed or not delivered (client gone mid-turn) costs nothing and
 * leaves no hold; a balance that runs out ends the session with a fatal insufficient_quota error after the
 * item it could pay for.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appends, gaUpdate, RealtimeClient, silence, speak, startRealtimeServer } from '../../helpers/realtime.js';
import type { TestServer } from '../../helpers/test-server.js';

const COMPLETED = 'conversation.item.input_audio_transcription.completed';
let t: TestServer;

beforeAll(async () => {
  t = await startRealtimeServer();
}, 60_000);
afterAll(async () => {
  await t?.close();
});

async function settledRows(accountId: string) {
  // Holds are released (or settled) once the server has seen the socket close.
  for (let i = 0; i < 100 && t.server.ledger.openReservations > 0; i++) await new Promise((r) => setTimeout(r, 20));
  expect(t.server.ledger.openReservations).toBe(0);
  return t.server.store.listUsage({ accountId });
}

describe('usage rows equal the usage each session reported', () => {
  it('two committed items, then a turn cut off by the client mid-speech: rows for the two delivered items only', async () => {
    const account = await t.newAccount(10_000_000);
    const c = await RealtimeClient.connect(t, 'intent=transcription', { apiKey: account.apiKey });
    c.send(gaUpdate());
    await c.next('session.updated');
    c.sendAll(appends(Buffer.concat([silence(0.4), await speak(t, 'i ni ce'), silence(1), await speak(t, 'a ni sogoma'), silence(1)])));
    await c.next(COMPLETED, 2);
    // A third turn starts and the client leaves before it ends.
    c.sendAll(appends(Buffer.concat([await speak(t, 'hakɛto i ni ce a ni sogoma')])));
    await c.next('input_audio_buffer.speech_started', 3);
    c.close();
    await c.closed;
    const reported = c.of(COMPLETED).map((e) => e.usage.seconds);
    const rows = await settledRows(account.accountId);
    expect(rows.map((r) => [r.model, r.unit, r.quantity])).toEqual(reported.map((s) => ['sunjata-1', 'second', s]));
    const account2 = await t.server.store.getAccount(account.accountId);
    expect(account2!.balanceMicros).toBe(10_000_000 - rows.reduce((sum, r) => sum + r.costMicros, 0));
  });

  it('a commit and an immediate disconnect: whatever was charged was delivered', async () => {
    const account = await t.newAccount(10_000_000);
    const c = await RealtimeClient.connect(t, 'intent=transcription', { apiKey: account.apiKey });
    c.send(gaUpdate({ turn_detection: null }));
    await c.next('session.updated');
    c.sendAll(appends(await speak(t, 'a ni sogoma i ni ce')));
    c.send({ type: 'input_audio_buffer.commit' });
    c.close();
    await c.closed;
    const rows = await settledRows(account.accountId);
    expect(rows.map((r) => r.quantity)).toEqual(c.of(COMPLETED).map((e) => e.usage.seconds));
  });

  it('a balance that runs out: the items it covers complete, then a fatal insufficient_quota error and close 1008', async () => {
    // At 100 micros a second: a balance of one and a half items' cost covers one item, not two.
    const speech = await speak(t, 'i ni ce');
    const account = await t.newAccount(Math.ceil((speech.length / 48_000) * 150));
    const c = await RealtimeClient.connect(t, 'intent=transcription', { apiKey: account.apiKey });
    c.send(gaUpdate({ turn_detection: null }));
    await c.next('session.updated');
    for (let i = 0; i < 2; i++) {
      c.sendAll(appends(speech));
      c.send({ type: 'input_audio_buffer.commit' });
    }
    const error = await c.next('error');
    expect(error.error).toMatchObject({ type: 'insufficient_quota', code: 'insufficient_quota' });
    expect((await c.closed).code).toBe(1008);
    expect(c.of(COMPLETED).map((e) => e.transcript)).toEqual(['i ni ce']);
    expect(c.events.indexOf(c.of(COMPLETED)[0]!)).toBeLessThan(c.events.indexOf(error));
    const rows = await settledRows(account.accountId);
    expect(rows.map((r) => r.quantity)).toEqual(c.of(COMPLETED).map((e) => e.usage.seconds));
  });
});
