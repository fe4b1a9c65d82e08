/**
 * Overdraft (P6 item 3) through HTTP with the demo models: many concurrent requests on a small balance.
 * Every request holds its cost before any model runs, so the balance never goes below zero where holds
 * are exact (speech, character-billed chat, transcription), usage rows sum to the balance change exactly,
 * every response is 200 or 402, and what the 200s report is what was charged. Also the usage counter on
 * /metrics, and the token-billed model's hold bounding what it bills.
 */
import fc from 'fast-check';
import { chargesSettled } from '../helpers/settled.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authed, startTestServer, type TestServer } from '../helpers/test-server.js';
import { spokenPhrases, wavBytes } from '../helpers/audio.js';
import { maxTranslateTokens } from '../../src/engines/mt/translate-token-bound.js';
import { sseJson } from '../helpers/sse.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ clock: () => new Date('2026-09-01T12:00:00Z'), config: { modelsManifest: 'models/kuma-models.json', demoPack: false } });
  await t.server.enginesReady;
}, 120_000);
afterAll(() => t.close());

const SPEECH_INPUT = 'i ni ce a b d e f g'; // 19 characters × 15 micros = 285 micros
const CHAT_INPUT = 'n fa ni n ba bɛ malo dun'; // 24 characters × 20 micros = 480 micros

const post = (apiKey: string, path: string, body: unknown) =>
  fetch(`${t.baseUrl}/openai/v1${path}`, authed(apiKey, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }));

/** SSE `data:` payloads of a finished stream. */
async function sseData(res: Response): Promise<Array<Record<string, any>>> {
  return sseJson(await res.text());
}

async function ledgerOf(accountId: string) {
  await chargesSettled(t); // a response is charged once it was delivered: a moment after the client has it
  const rows = await t.server.store.listUsage({ accountId });
  return { rows, charged: rows.reduce((sum, r) => sum + r.costMicros, 0), balance: (await t.server.store.getAccount(accountId))!.balanceMicros };
}

describe('200 concurrent requests on a 2,000-micro balance', () => {
  it('speech (SSE): never below zero, 200 or 402 only, rows = balance change = what the 200s report', async () => {
    const acct = await t.newAccount(2000);
    const responses = await Promise.all(
      Array.from({ length: 200 }, async () => {
        const res = await post(acct.apiKey, '/audio/speech', { model: 'jifili-1', input: SPEECH_INPUT, response_format: 'mp3', stream_format: 'sse' });
        if (res.status !== 200) return { status: res.status, body: await res.json() };
        const events = await sseData(res);
        return { status: 200, usage: events.at(-1)!.usage as { input_tokens: number } };
      }),
    );
    expect(new Set(responses.map((r) => r.status))).toEqual(new Set([200, 402]));
    for (const r of responses) if (r.status === 402) expect(r.body).toMatchObject({ error: { type: 'insufficient_quota', code: 'insufficient_quota' } });
    const ok = responses.filter((r) => r.status === 200);
    expect(ok).toHaveLength(Math.floor(2000 / 285)); // exact holds: exactly the affordable requests ran
    const { rows, charged, balance } = await ledgerOf(acct.accountId);
    expect(balance).toBeGreaterThanOrEqual(0);
    expect(charged).toBe(2000 - balance);
    const reported = ok.reduce((sum, r) => sum + r.usage!.input_tokens, 0);
    expect(rows.reduce((sum, r) => sum + r.quantity, 0)).toBe(reported);
    expect(charged).toBe(reported * 15);
    expect(await t.server.store.availableMicros(acct.accountId, Date.now())).toBe(balance); // no hold left behind
  }, 120_000);

  it('chat (characters): never below zero, 200 or 402 only, rows = balance change = what the 200s report', async () => {
    const acct = await t.newAccount(2000);
    const responses = await Promise.all(
      Array.from({ length: 200 }, async () => {
        const res = await post(acct.apiKey, '/chat/completions', {
          model: 'banjugu-1',
          messages: [{ role: 'user', content: CHAT_INPUT }],
          djelia: { source_language: 'bam_Latn', target_language: 'fra_Latn' },
        });
        return { status: res.status, body: (await res.json()) as { usage?: { total_tokens: number } } };
      }),
    );
    expect(new Set(responses.map((r) => r.status))).toEqual(new Set([200, 402]));
    const ok = responses.filter((r) => r.status === 200);
    expect(ok).toHaveLength(Math.floor(2000 / 480));
    const { charged, balance } = await ledgerOf(acct.accountId);
    expect(balance).toBeGreaterThanOrEqual(0);
    expect(charged).toBe(2000 - balance);
    expect(charged).toBe(ok.reduce((sum, r) => sum + r.body.usage!.total_tokens, 0) * 20);
  }, 120_000);

  it('transcription uploads: never below zero, rows = balance change', async () => {
    const audio = spokenPhrases(['i ni ce']);
    const cost = Math.ceil(audio.seconds * 1000) / 10; // 100 micros a second, to the millisecond
    const acct = await t.newAccount(2000);
    const statuses = await Promise.all(
      Array.from({ length: 60 }, async () => {
        const form = new FormData();
        form.append('model', 'sunjata-1');
        form.append('file', new Blob([wavBytes(audio.samples, 16000)], { type: 'audio/wav' }), 'a.wav');
        const res = await fetch(`${t.baseUrl}/openai/v1/audio/transcriptions`, authed(acct.apiKey, { method: 'POST', body: form }));
        await res.arrayBuffer();
        return res.status;
      }),
    );
    expect(new Set(statuses)).toEqual(new Set([200, 402]));
    const { rows, charged, balance } = await ledgerOf(acct.accountId);
    expect(rows).toHaveLength(statuses.filter((s) => s === 200).length);
    expect(rows.length).toBe(Math.floor(2000 / Math.ceil(cost)));
    expect(balance).toBeGreaterThanOrEqual(0);
    expect(charged).toBe(2000 - balance);
  }, 120_000);
});

describe('the token-billed model', () => {
  it('bills no more tokens than it held, for any text (the hold is an upper bound)', async () => {
    const acct = await t.newAccount(1_000_000_000);
    const word = fc.constantFrom('n', 'fa', 'ni', 'ba', 'bɛ', 'malo', 'dun', 'ɲɔgɔn', 'x', 'ﬁ', '①', '😀');
    const text = fc.array(fc.tuple(word, fc.constantFrom(' ', ' ', '. ', '? ', '\n')), { minLength: 1, maxLength: 40 }).map((parts) =>
      parts
        .map(([w, sep]) => w + sep)
        .join('')
        .trim(),
    );
    const info = t.server.engines!.get('banjugu-1')!.info;
    await fc.assert(
      fc.asyncProperty(text, async (input) => {
        const res = await post(acct.apiKey, '/chat/completions', {
          model: 'djelia-translate-v2',
          messages: [{ role: 'user', content: input }],
          djelia: { source_language: 'bam_Latn', target_language: 'eng_Latn' },
        });
        expect(res.status).toBe(200);
        const { usage } = (await res.json()) as { usage: { total_tokens: number } };
        expect(usage.total_tokens).toBeGreaterThan(0);
        expect(usage.total_tokens).toBeLessThanOrEqual(maxTranslateTokens(input, info));
      }),
      { seed: 3_2026, numRuns: 25 },
    );
    const { charged, balance } = await ledgerOf(acct.accountId);
    expect(charged).toBe(1_000_000_000 - balance);
  }, 120_000);

  it('is refused with 402 when the balance cannot hold its bound, and nothing is charged', async () => {
    const acct = await t.newAccount(2000); // one sentence's bound is ≈ 200 tokens × 60 micros
    const res = await post(acct.apiKey, '/chat/completions', {
      model: 'djelia-translate-v2',
      messages: [{ role: 'user', content: 'malo' }],
      djelia: { source_language: 'bam_Latn', target_language: 'eng_Latn' },
    });
    expect(res.status).toBe(402);
    expect((await ledgerOf(acct.accountId)).rows).toEqual([]);
  });
});

describe('kuma_usage_units_total', () => {
  const counter = async (model: string, unit: string) => {
    const text = await (await fetch(`${t.baseUrl}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith(`kuma_usage_units_total{model="${model}",unit="${unit}"}`));
    return line ? Number(line.split(' ').at(-1)) : 0;
  };

  it('counts exactly what the ledger records after a charged request', async () => {
    const before = await counter('jifili-1', 'character');
    const res = await post(t.apiKey, '/audio/speech', { model: 'jifili-1', input: SPEECH_INPUT, response_format: 'wav' });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    const requestId = res.headers.get('x-request-id')!;
    await chargesSettled(t); // the charge, and its metric, land once the answer was delivered
    const [row, ...more] = await t.server.store.listUsage({ requestId });
    expect(more).toEqual([]);
    expect(await counter('jifili-1', 'character')).toBe(before + row!.quantity);
    expect(row!.quantity).toBe([...SPEECH_INPUT].length);
  });
});
