/**
 * The bilingual bridge's return path, with a recording translation engine and a real ledger: however the
 * app's reply is cut into tokens, the same sentences are translated, in order, each once, billed by its
 * characters; a reset (an interruption) drops what is waiting and what is being translated.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ledger } from '../../../../src/billing/ledger.js';
import { loadConfig } from '../../../../src/config/config.js';
import { openSqliteStore } from '../../../../src/store/sqlite-store.js';
import type { Store } from '../../../../src/store/store.js';
import { ReplyTranslator, type TranslatedPiece } from '../../../../src/telephony/call/reply-translator.js';

let dir: string;
let store: Store;
let ledger: Ledger;
let accountId: string;
beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-reply-'));
  store = await openSqliteStore(path.join(dir, 'db.sqlite'));
  ledger = new Ledger(store, loadConfig({}).prices);
  accountId = (await store.createAccount('t', 1_000_000_000)).id;
});
afterAll(async () => {
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Translates by upper-casing (and records what it was asked). */
function engine(asked: string[], delayMs = 0) {
  return {
    async run<T>(_method: string, input: unknown): Promise<T> {
      const text = (input as { texts: string[] }).texts[0]!;
      asked.push(text);
      if (delayMs) await new Promise((resolve) => setTimeout(resolve, delayMs));
      return { translations: [text.toUpperCase()] } as T;
    },
  };
}

function translator(asked: string[], pieces: TranslatedPiece[], requestId: string, delayMs = 0) {
  return new ReplyTranslator(
    { engine: engine(asked, delayMs), model: 'banjugu-1', source: 'fra_Latn', ledger, charge: { requestId, accountId, keyId: 'key' } },
    new AbortController().signal,
    async (piece) => void pieces.push(piece),
    (err) => {
      throw err;
    },
  );
}

const word = fc.stringMatching(/^[a-zà-ü]{1,8}$/);
const sentence = fc.tuple(fc.array(word, { minLength: 1, maxLength: 6 }), fc.constantFrom('.', '!', '?', '…')).map(([w, end]) => w.join(' ') + end);

describe('ReplyTranslator', () => {
  it('any cut of a reply into tokens gives the same sentences, in order, each billed once (property)', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(sentence, { minLength: 1, maxLength: 4 }),
        fc.array(fc.integer({ min: 1, max: 7 }), { minLength: 1, maxLength: 40 }),
        async (sentences, cuts) => {
          const reply = sentences.join(' ');
          const tokens: string[] = [];
          for (let at = 0, i = 0; at < reply.length; i++) {
            const n = cuts[i % cuts.length]!;
            tokens.push(reply.slice(at, at + n));
            at += n;
          }
          const asked: string[] = [];
          const pieces: TranslatedPiece[] = [];
          const requestId = `req_${run++}`;
          const t = translator(asked, pieces, requestId);
          tokens.forEach((token, i) => t.push(token, i === tokens.length - 1));
          await t.settled();
          expect(asked).toEqual(sentences);
          expect(pieces.map((p) => p.text).join('')).toBe(sentences.map((s) => s.toUpperCase()).join(' '));
          expect(pieces.at(-1)!.last).toBe(true);
          const rows = await store.listUsage({ requestId });
          expect(rows.reduce((n, r) => n + r.quantity, 0)).toBe(sentences.reduce((n, s) => n + [...s].length, 0));
        },
      ),
      { numRuns: 40 },
    );
  });

  it('reset drops the sentence being translated and those waiting; nothing of them is billed', async () => {
    const asked: string[] = [];
    const pieces: TranslatedPiece[] = [];
    const t = translator(asked, pieces, 'req_reset', 50);
    t.push('un deux. trois quatre. cinq', false);
    t.reset();
    t.push('six sept.', true);
    await t.settled();
    expect(pieces.map((p) => p.original)).toEqual(['six sept.']);
    const rows = await store.listUsage({ requestId: 'req_reset' });
    expect(rows.map((r) => r.quantity)).toEqual([[...'six sept.'].length]);
    expect(ledger.openReservations).toBe(0);
  });

  it('translates one sentence at a time, each as soon as the one before is translated (not spoken); hands them on in order (property)', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(sentence, fc.integer({ min: 0, max: 15 })), { minLength: 2, maxLength: 4 }), async (timed) => {
        const events: string[] = [];
        let running = 0;
        let overlapped = false;
        const delays = new Map(timed.map(([s, ms]) => [s, ms]));
        const slow = {
          async run<T>(_method: string, input: unknown): Promise<T> {
            const text = (input as { texts: string[] }).texts[0]!;
            events.push(`start ${text}`);
            overlapped ||= running > 0;
            running++;
            await new Promise((resolve) => setTimeout(resolve, delays.get(text) ?? 0));
            running--;
            return { translations: [text.toUpperCase()] } as T;
          },
        };
        const pieces: TranslatedPiece[] = [];
        const t = new ReplyTranslator(
          { engine: slow, model: 'banjugu-1', source: 'fra_Latn', ledger, charge: { requestId: `req_order_${run++}`, accountId, keyId: 'key' } },
          new AbortController().signal,
          // The voice takes its time over each piece: the next translation does not wait for it.
          async (piece) => {
            pieces.push(piece);
            await new Promise((resolve) => setTimeout(resolve, 40));
            events.push(`spoken ${piece.original}`);
          },
          (err) => {
            throw err;
          },
        );
        const sentences = timed.map(([s]) => s);
        t.push(sentences.join(' '), true);
        await t.settled();
        expect(pieces.map((p) => p.original)).toEqual(sentences);
        expect(overlapped).toBe(false);
        expect(events.indexOf(`start ${sentences[1]}`)).toBeLessThan(events.indexOf(`spoken ${sentences[0]}`));
        expect(ledger.openReservations).toBe(0);
      }),
      { numRuns: 25 },
    );
  });

  it('reset aborts the translation under way (its model run stops), and its failure is no error', async () => {
    const signals: AbortSignal[] = [];
    const errors: unknown[] = [];
    const pending = {
      async run<T>(_method: string, _input: unknown, signal: AbortSignal): Promise<T> {
        signals.push(signal);
        return new Promise<T>((_resolve, reject) => signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true }));
      },
    };
    const t = new ReplyTranslator(
      { engine: pending, model: 'banjugu-1', source: 'fra_Latn', ledger, charge: { requestId: 'req_abort', accountId, keyId: 'key' } },
      new AbortController().signal,
      async () => {},
      (err) => errors.push(err),
    );
    t.push('un deux. trois', false);
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(signals).toHaveLength(1);
    t.reset();
    await t.settled();
    expect(signals[0]!.aborted).toBe(true);
    expect(errors).toEqual([]);
    expect(ledger.openReservations).toBe(0);
  });
});
