/**
 * WebhookSender against real HTTP receivers on ephemeral ports and a real SQLite store: signature, retries,
 * per-call ordering (at least once: receivers dedupe by event id), independence of calls and accounts while
 * an endpoint hangs, the overflow policy, give-ups, and shutdown. No timing assertions: orderings and counts.
 */
import fc from 'fast-check';
import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../../../src/observability/logger.js';
import { Metrics } from '../../../../src/observability/metrics.js';
import { openSqliteStore } from '../../../../src/store/sqlite-store.js';
import type { Store } from '../../../../src/store/store.js';
import type { CallEvent } from '../../../../src/telephony/webhooks/events.js';
import { newWebhookSecret, verifyWebhookSignature, WebhookSender, type WebhookSenderOptions } from '../../../../src/telephony/webhooks/index.js';
import { startWebhookReceiver, type Answer, type WebhookReceiver } from '../../../helpers/webhook-receiver.js';

let store: Store;
let receivers: WebhookReceiver[];
let senders: WebhookSender[];
let logs: string[];

beforeEach(async () => {
  store = await openSqliteStore(':memory:');
  receivers = [];
  senders = [];
  logs = [];
});

afterEach(async () => {
  await Promise.all(senders.map((s) => s.close(0)));
  await Promise.all(receivers.map((r) => r.close()));
  await store.close();
});

const FAST: WebhookSenderOptions = { retry: { baseDelayMs: 1, maxDelayMs: 4, retryAfterCapMs: 4 }, attemptTimeoutMs: 5_000 };

function newSender(options: WebhookSenderOptions = FAST, checkUrl: (url: URL) => Promise<void> = async () => undefined) {
  const metrics = new Metrics({ defaultMetrics: false });
  const destination = new Writable({ write: (chunk, _enc, done) => (logs.push(String(chunk)), done()) });
  const sender = new WebhookSender({ store, checkUrl, metrics, logger: createLogger('debug', destination) }, options);
  senders.push(sender);
  const count = async (name: string, labels: Record<string, string> = {}) => {
    const values = (await metrics.registry.getSingleMetric(name)!.get()).values;
    return values.filter((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l)).reduce((sum, v) => sum + v.value, 0);
  };
  return { sender, count };
}

async function receiver(respond?: Parameters<typeof startWebhookReceiver>[0]) {
  const r = await startWebhookReceiver(respond);
  receivers.push(r);
  return r;
}

async function accountWithWebhook(url: string | undefined) {
  const account = await store.createAccount('hooks', 0);
  const secret = newWebhookSecret();
  if (url) await store.setWebhook(account.id, { url, secret });
  return { accountId: account.id, secret };
}

/** Resolves once `condition` holds, checking once per event-loop turn (the test's timeout bounds it). */
async function eventually(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setImmediate(resolve));
}

const dtmf = (digit: string): CallEvent => ({ type: 'dtmf', data: { digit } });
const interim = (item_id: string, text: string): CallEvent => ({ type: 'transcript.interim', data: { item_id, text } });
const final = (item_id: string, text: string): CallEvent => ({
  type: 'transcript.final',
  data: { item_id, text, language: 'bam', audio_start_ms: 0, audio_end_ms: 900 },
});
const started: CallEvent = { type: 'call.started', data: { carrier: 'twilio', mode: 'transcription' } };
const ended: CallEvent = {
  type: 'call.ended',
  data: {
    reason: 'caller_hangup',
    duration_ms: 1000,
    turns: 1,
    usage: { caller_seconds: 1, characters_synthesized: 0, characters_translated: 0, cost_micros: 10 },
  },
};

describe('WebhookSender', () => {
  it('posts the documented envelope, signed so that verifyWebhookSignature accepts it and nothing else', async () => {
    const r = await receiver();
    const { accountId, secret } = await accountWithWebhook(`${r.url}/hooks?tenant=1`);
    const { sender } = newSender();
    sender.send(accountId, 'call_1', final('item_1', 'i ni ce'));
    await r.until((got) => got.length === 1);
    const [got] = r.received;
    expect(got!.path).toBe('/hooks?tenant=1');
    expect(got!.event).toMatchObject({
      id: expect.stringMatching(/^evt_[0-9a-f]{24}$/),
      type: 'transcript.final',
      call_id: 'call_1',
      data: { item_id: 'item_1', text: 'i ni ce', language: 'bam' },
    });
    expect(new Date(got!.event.created_at).toISOString()).toBe(got!.event.created_at);
    expect(got!.headers).toMatchObject({ 'content-type': 'application/json', 'user-agent': 'Kuma-Webhooks/1', 'kuma-event-id': got!.event.id });
    const header = got!.headers['kuma-signature'] as string;
    const now = Math.floor(Date.now() / 1000);
    expect(verifyWebhookSignature(secret, header, got!.body, now)).toMatchObject({ valid: true });
    expect(verifyWebhookSignature(secret, header, got!.body.replace('i ni ce', 'i ni ke'), now)).toEqual({ valid: false, reason: 'mismatch' });
    expect(verifyWebhookSignature(newWebhookSecret(), header, got!.body, now)).toEqual({ valid: false, reason: 'mismatch' });
    expect(verifyWebhookSignature(secret, header, got!.body, now + 3600)).toEqual({ valid: false, reason: 'expired' });
  });

  it('retries 500, 500 then delivers once, and the events after it follow in order', async () => {
    let failures = 2;
    const r = await receiver(() => (failures-- > 0 ? { status: 500 } : { status: 200 }));
    const { accountId } = await accountWithWebhook(r.url);
    const { sender, count } = newSender();
    for (const d of ['1', '2', '3']) sender.send(accountId, 'call_r', dtmf(d));
    expect(await sender.close(10_000)).toEqual({ abandoned: 0 });
    expect(r.received.map((x) => x.event.data)).toEqual([{ digit: '1' }, { digit: '1' }, { digit: '1' }, { digit: '2' }, { digit: '3' }]);
    expect(new Set(r.received.slice(0, 3).map((x) => x.event.id)).size).toBe(1); // a retry is the same event
    expect(await count('kuma_webhook_attempts_retried_total')).toBe(2);
    expect(await count('kuma_webhook_events_delivered_total')).toBe(3);
  });

  it('retries an attempt that gets no answer within the timeout, and gives up after the last attempt', async () => {
    let answered = 0;
    const r = await receiver((req) => {
      if (req.event.type === 'call.started' && answered++ === 0) return new Promise<Answer>(() => undefined); // first attempt hangs
      return req.event.type === 'dtmf' ? { status: 503, headers: { 'retry-after': '0' } } : { status: 200 };
    });
    const { accountId } = await accountWithWebhook(r.url);
    const { sender, count } = newSender({ ...FAST, attemptTimeoutMs: 1_500, retry: { ...FAST.retry, maxAttempts: 3 } });
    sender.send(accountId, 'call_t', started);
    sender.send(accountId, 'call_t', dtmf('1'));
    sender.send(accountId, 'call_t', ended);
    expect(await sender.close(10_000)).toEqual({ abandoned: 0 });
    // (On a very loaded machine another attempt may time out too; the dtmf still gets exactly its 3 attempts.)
    const types = r.received.map((x) => x.event.type);
    expect(types.filter((t) => t === 'call.started').length).toBeGreaterThanOrEqual(2);
    expect(types.slice(types.lastIndexOf('call.started') + 1)).toEqual(['dtmf', 'dtmf', 'dtmf', 'call.ended']);
    expect(await count('kuma_webhook_events_given_up_total', { reason: 'attempts_exhausted' })).toBe(1);
    expect(await count('kuma_webhook_events_delivered_total')).toBe(2);
    expect(logs.find((l) => l.includes('attempts_exhausted'))).toContain('status 503');
  });

  it("keeps each call's events in send order under any failure script, with no repeat after a success", async () => {
    const answers: Answer[] = [{ status: 200 }, { status: 500 }, { status: 503 }, { status: 429 }, { status: 408 }, 'drop'];
    const r = await receiver();
    const accounts = [await accountWithWebhook(r.url), await accountWithWebhook(r.url)];
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: answers.length - 1 }), { minLength: 1, maxLength: 40 }),
        fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 1, maxLength: 24 }),
        async (script, sendOrder) => {
          r.received.length = 0;
          let next = 0;
          const failuresOf = new Map<string, number>();
          r.setResponder((req) => {
            // Scripted answers, but an event fails at most 3 times so that it is delivered within maxAttempts.
            const fails = failuresOf.get(req.event.id) ?? 0;
            const answer = fails >= 3 ? { status: 200 } : answers[script[next++ % script.length]!]!;
            if (answer === 'drop' || answer.status !== 200) failuresOf.set(req.event.id, fails + 1);
            return answer;
          });
          const { sender } = newSender({ ...FAST, retry: { ...FAST.retry, maxAttempts: 4 } });
          const calls = [0, 1, 2].map((i) => ({ id: `call_${i}_${Math.random()}`, accountId: accounts[i % 2]!.accountId, sent: [] as string[] }));
          sendOrder.forEach((c, n) => {
            calls[c]!.sent.push(String(n));
            sender.send(calls[c]!.accountId, calls[c]!.id, dtmf(String(n)));
          });
          expect(await sender.close(20_000)).toEqual({ abandoned: 0 });
          for (const call of calls) {
            const seen = r.received.filter((x) => x.event.call_id === call.id);
            // Deduped by event id, in first-arrival order: exactly what was sent, in send order.
            const firstArrivals = [...new Map(seen.map((x) => [x.event.id, (x.event.data as { digit: string }).digit])).values()];
            expect(firstArrivals).toEqual(call.sent);
            // A repeat only follows a failed (or lost) attempt of the same event, never a 200.
            seen.forEach((x, i) => {
              if (i > 0 && x.event.id === seen[i - 1]!.event.id) expect(seen[i - 1]!.answer).not.toEqual({ status: 200 });
              if (i > 0 && x.event.id !== seen[i - 1]!.event.id) expect(seen[i - 1]!.answer).toEqual({ status: 200 });
            });
          }
        },
      ),
      { numRuns: 15 },
    );
  });

  it("a hanging endpoint delays neither another account nor send(): it holds only its account's share of slots", async () => {
    const hanging = await receiver(() => new Promise<Answer>(() => undefined));
    const healthy = await receiver();
    const stuck = await accountWithWebhook(hanging.url);
    const fine = await accountWithWebhook(healthy.url);
    const { sender, count } = newSender({ ...FAST, maxInFlight: 12, maxInFlightPerAccount: 4 });
    for (let c = 0; c < 10; c++) {
      for (const d of ['1', '2']) expect(sender.send(stuck.accountId, `stuck_${c}`, dtmf(d))).toBeUndefined();
    }
    // send() only queued: nothing has reached either receiver yet.
    expect(hanging.received.length + healthy.received.length).toBe(0);
    expect(sender.pending).toBe(20);
    await hanging.until((got) => got.length === 4);
    for (let c = 0; c < 10; c++) sender.send(fine.accountId, `fine_${c}`, dtmf('9'));
    await healthy.until((got) => got.length === 10 && got.every((x) => x.answer !== undefined));
    await eventually(() => sender.pending === 20);
    // The healthy account's events went through while the stuck account's first attempts still hang.
    expect(hanging.open()).toBe(4);
    expect(hanging.received).toHaveLength(4);
    expect(await count('kuma_webhook_events_delivered_total')).toBe(10);
    expect(await sender.close(0)).toEqual({ abandoned: 20 });
    expect(await count('kuma_webhook_events_given_up_total', { reason: 'shutdown' })).toBe(20);
  });

  it('on overflow drops queued interims first (a newer interim replaces a queued one), never call.ended', async () => {
    let release!: () => void;
    const held = new Promise<Answer>((resolve) => (release = () => resolve({ status: 200 })));
    const r = await receiver((req) => (req.event.type === 'call.started' ? held : { status: 200 }));
    const { accountId } = await accountWithWebhook(r.url);
    const { sender, count } = newSender({ ...FAST, queueLimitPerCall: 4 });
    sender.send(accountId, 'call_o', started);
    await r.until((got) => got.length === 1); // call.started is in flight and held
    sender.send(accountId, 'call_o', interim('a', 'i'));
    sender.send(accountId, 'call_o', interim('b', 'a'));
    sender.send(accountId, 'call_o', final('a', 'i ni ce'));
    sender.send(accountId, 'call_o', interim('b', 'a ka')); // replaces interim b "a"
    sender.send(accountId, 'call_o', dtmf('1')); // full: drops interim a
    sender.send(accountId, 'call_o', final('b', 'a ka nyi')); // full: drops interim b "a ka"
    sender.send(accountId, 'call_o', dtmf('2')); // full, no interim left: refused, logged
    sender.send(accountId, 'call_o', ended); // always admitted
    release();
    expect(await sender.close(10_000)).toEqual({ abandoned: 0 });
    expect(r.received.map((x) => x.event.type)).toEqual(['call.started', 'transcript.final', 'dtmf', 'transcript.final', 'call.ended']);
    expect(r.received[2]!.event.data).toEqual({ digit: '1' });
    expect(await count('kuma_webhook_events_dropped_total', { reason: 'superseded', type: 'transcript.interim' })).toBe(1);
    expect(await count('kuma_webhook_events_dropped_total', { reason: 'queue_full', type: 'transcript.interim' })).toBe(2);
    expect(await count('kuma_webhook_events_dropped_total', { reason: 'queue_full', type: 'dtmf' })).toBe(1);
    expect(logs.some((l) => l.includes('"level":40') && l.includes('webhook queue full') && l.includes('"type":"dtmf"'))).toBe(true);
  });

  it('a 400 gives up at once, logged without the body or the secret, and the next event goes on', async () => {
    const r = await receiver((req) => (req.event.type === 'transcript.final' ? { status: 400 } : { status: 200 }));
    const { accountId, secret } = await accountWithWebhook(`${r.url}/in?token=s3cr3t-query`);
    const { sender, count } = newSender();
    sender.send(accountId, 'call_4', final('x', 'private caller words'));
    sender.send(accountId, 'call_4', dtmf('5'));
    expect(await sender.close(10_000)).toEqual({ abandoned: 0 });
    expect(r.received.map((x) => x.event.type)).toEqual(['transcript.final', 'dtmf']);
    expect(await count('kuma_webhook_events_given_up_total', { reason: 'rejected' })).toBe(1);
    expect(await count('kuma_webhook_attempts_retried_total')).toBe(0);
    const giveUp = logs.find((l) => l.includes('webhook event given up'))!;
    expect(giveUp).toContain('status 400');
    for (const l of logs) for (const hidden of [secret, 'private caller words', 's3cr3t-query']) expect(l).not.toContain(hidden);
  });

  it('gives events up when the outbound policy refuses the URL (asked once per URL), and drops them without a webhook', async () => {
    const r = await receiver();
    const refused = await accountWithWebhook(r.url);
    const none = await accountWithWebhook(undefined);
    let checks = 0;
    const { sender, count } = newSender(FAST, async () => {
      checks++;
      throw new Error('host 127.0.0.1 is not on KUMA_OUTBOUND_ALLOW');
    });
    for (const d of ['1', '2', '3']) sender.send(refused.accountId, 'call_p', dtmf(d));
    sender.send(none.accountId, 'call_n', dtmf('1'));
    expect(await sender.close(10_000)).toEqual({ abandoned: 0 });
    expect(r.received).toHaveLength(0);
    expect(checks).toBe(1);
    expect(await count('kuma_webhook_events_given_up_total', { reason: 'refused_url' })).toBe(3);
    expect(await count('kuma_webhook_events_dropped_total', { reason: 'no_webhook' })).toBe(1);
    expect(logs.filter((l) => l.includes('not on KUMA_OUTBOUND_ALLOW'))).toHaveLength(3);
  });

  it('after close() it takes no more events, and counts them as dropped', async () => {
    const r = await receiver();
    const { accountId } = await accountWithWebhook(r.url);
    const { sender, count } = newSender();
    await sender.close(1_000);
    sender.send(accountId, 'call_c', dtmf('1'));
    expect(sender.pending).toBe(0);
    expect(await count('kuma_webhook_events_dropped_total', { reason: 'closed' })).toBe(1);
  });
});
