/**
 * Transcription mode: caller turns become signed webhooks (`call.started`, `transcript.final`, `dtmf`,
 * `call.ended`), delivered in order and retried, and the same events on the call's control socket. A webhook
 * endpoint that hangs does not hold the call: its turns still reach the control socket and its greeting
 * still plays to the end.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { TestServer } from '../../helpers/test-server.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../helpers/webhook-receiver.js';
import { wsUrl } from '../../helpers/websocket-client.js';
import { callerSpeech, dialCarrier, mintToken, startTelephonyServer } from '../../helpers/telephony.js';
import { verifyWebhookSignature } from '../../../src/telephony/webhooks/index.js';

const TURN_1 = 'n bɛ taa sugu la';
const TURN_2 = 'an bɛ malo san sini';
const SECRET = 'whsec_test_secret_for_kuma_webhooks';

let t: TestServer;
let receiver: WebhookReceiver;
beforeAll(async () => {
  // A short grace: the hanging endpoint's requests are still in flight when the server stops.
  t = await startTelephonyServer({ shutdownGraceMs: 1000 });
  receiver = await startWebhookReceiver();
}, 120_000);
afterAll(async () => {
  await receiver.close();
  await t.close();
});

/** Opens the control socket of a live call and records its events. */
async function follow(callId: string, apiKey: string): Promise<{ events: any[]; closed: Promise<number> }> {
  const ws = new WebSocket(wsUrl(t.baseUrl, `/telephony/v1/calls/${callId}/events`), { headers: { authorization: `Bearer ${apiKey}` } });
  const events: any[] = [];
  ws.on('message', (data) => events.push(JSON.parse(data.toString())));
  const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return { events, closed };
}

describe('transcription mode', () => {
  it('turns, dtmf and the call go out as signed webhooks, in order, retried after a failure; the control socket sees the same', async () => {
    const account = await t.newAccount(10_000_000);
    await t.server.store.setWebhook(account.accountId, { url: `${receiver.url}/hooks`, secret: SECRET });
    // The first transcript.final fails twice: it is retried, and what follows still arrives after it.
    const failures = new Map<string, number>();
    receiver.setResponder((r) => {
      if (r.event.type !== 'transcript.final') return { status: 200 };
      const n = failures.get(r.event.id) ?? 0;
      failures.set(r.event.id, n + 1);
      return failures.size === 1 && n < 2 ? { status: 500 } : { status: 200 };
    });
    const token = await mintToken(t, { mode: 'transcription' }, account.apiKey);
    const [one, two] = await Promise.all([callerSpeech(t, TURN_1), callerSpeech(t, TURN_2)]);
    const callSid = `CA${'1'.repeat(32)}`;
    const { call, closed } = await dialCarrier(t, 'twilio', { token, callSid, speed: 2 } as never);
    await receiver.until((r) => r.some((x) => x.event.type === 'call.started'));
    const control = await follow(callSid, account.apiKey);
    await call.silence(300);
    await call.speak(one);
    await call.silence(1000);
    call.dtmf('5');
    await call.speak(two);
    await call.silence(1000);
    await receiver.until(
      (r) => r.filter((x) => x.event.type === 'transcript.final' && x.answer !== undefined && x.answer !== 'drop' && x.answer.status === 200).length === 2,
    );
    call.hangup();
    await closed;
    await receiver.until((r) => r.some((x) => x.event.type === 'call.ended'));
    expect(await control.closed).toBe(1000);

    const delivered = receiver.received.filter((r) => r.answer !== 'drop' && r.answer?.status === 200);
    for (const r of receiver.received) {
      const check = verifyWebhookSignature(SECRET, String(r.headers['kuma-signature']), r.body, Date.now() / 1000);
      expect(check.valid).toBe(true);
    }
    const order = delivered.map((r) => r.event.type);
    expect(order[0]).toBe('call.started');
    expect(order.at(-1)).toBe('call.ended');
    const finals = delivered.filter((r) => r.event.type === 'transcript.final').map((r) => r.event.data as { text: string; language: string });
    expect(finals.map((f) => f.text)).toEqual([TURN_1, TURN_2]);
    expect(finals[0]!.language).toBe('bam');
    expect(order.indexOf('dtmf')).toBeGreaterThan(order.indexOf('transcript.final'));
    expect(delivered.find((r) => r.event.type === 'dtmf')!.event.data).toEqual({ digit: '5' });
    // The failed event was attempted three times, with the same id.
    expect([...failures.values()]).toContain(3);
    const ended = delivered.find((r) => r.event.type === 'call.ended')!.event.data as { usage: { cost_micros: number } };
    expect(ended).toMatchObject({ reason: 'caller_hangup', turns: 2 });
    expect(ended.usage.cost_micros).toBeGreaterThan(0);
    // The control socket saw the same finals, in order, then the end.
    expect(control.events.filter((e) => e.type === 'transcript.final').map((e) => e.data.text)).toEqual([TURN_1, TURN_2]);
    expect(control.events.at(-1).type).toBe('call.ended');
  }, 60_000);

  it('a webhook endpoint that hangs holds nothing: the control socket gets the turn, the greeting plays whole', async () => {
    const account = await t.newAccount(10_000_000);
    await t.server.store.setWebhook(account.accountId, { url: `${receiver.url}/hangs`, secret: SECRET });
    receiver.setResponder(() => new Promise(() => {}));
    const token = await mintToken(t, { mode: 'transcription', welcome_greeting: 'i ni ce' }, account.apiKey);
    const speech = await callerSpeech(t, TURN_1);
    const callSid = `CA${'2'.repeat(32)}`;
    const { call, closed } = await dialCarrier(t, 'twilio', { token, callSid } as never);
    await receiver.until((r) => r.some((x) => x.path === '/hangs'));
    const control = await follow(callSid, account.apiKey);
    await call.waitFor((log) => log.marks.length > 0 && log.marks.every((m) => m.echoedAt !== null), 20_000);
    await call.speak(speech);
    await call.silence(1000);
    await expect.poll(() => control.events.filter((e) => e.type === 'transcript.final').map((e) => e.data.text), { timeout: 20_000 }).toEqual([TURN_1]);
    expect(call.log.protocolErrors).toEqual([]);
    expect(call.log.audio.length).toBeGreaterThan(10); // the greeting, in 20 ms frames
    call.hangup();
    await closed;
    receiver.setResponder(() => ({ status: 200 }));
  }, 60_000);
});
