/**
 * The voice core's billing rules, for all inputs (fast-check), on a real ledger (SQLite) and a real encoder:
 * - settle-to-delivered: whatever pieces the text arrives in, and wherever the audio is cut off, the
 *   utterance is charged exactly the characters whose audio its owner reported delivered — charged phrase
 *   by phrase (a socket) or once at the end (a call) — and no hold is left behind;
 * - split invariance: a text spoken to its end is charged the same whatever its pieces;
 * - the hold is always exactly the price of the phrases released and not yet charged, and text admitted by
 *   the voice's limits never leaves more than MAX_PENDING_CHARACTERS waiting.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ledger } from '../../../src/billing/ledger.js';
import { PriceTableSchema } from '../../../src/config/prices.js';
import { chunkText } from '../../../src/engines/tts/text-chunker.js';
import { createLogger } from '../../../src/observability/logger.js';
import { openSqliteStore } from '../../../src/store/sqlite-store.js';
import type { Store } from '../../../src/store/store.js';
import { TextPhraseSplitter } from '../../../src/voice/text-phrase-splitter.js';
import type { VoiceSetup } from '../../../src/voice/utterance.js';
import {
  checkTextLimits,
  MAX_MESSAGE_CHARACTERS,
  MAX_PENDING_CHARACTERS,
  SpeechLimitError,
  TextTooLongError,
  VoiceSession,
} from '../../../src/voice/voice-session.js';

const RUNS = Number(process.env.KUMA_PROPERTY_RUNS ?? 20);
const prices = PriceTableSchema.parse({});
const PRICE = prices.speechPerCharacter;
const BALANCE = 1_000_000_000;

let dir: string;
let store: Store;
let ledger: Ledger;

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'kuma-voice-'));
  store = await openSqliteStore(path.join(dir, 'kuma.sqlite'));
  ledger = new Ledger(store, prices);
});
afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A voice that says 2 ms of tone per character of the phrase (so phrases differ in length). */
const engine = {
  async run<T>(_method: string, input: unknown): Promise<T> {
    const { spoken } = input as { spoken: string };
    const samples = Float32Array.from({ length: 32 * [...spoken].length + 16 }, (_, i) => 0.2 * Math.sin(i / 5));
    return { samples, sampleRate: 16000 } as T;
  },
};

async function voiceFor(): Promise<{ voice: VoiceSession; accountId: string }> {
  const account = await store.createAccount('voice', BALANCE);
  const setup: VoiceSetup = {
    model: 'jifili-1',
    engine,
    voice: {},
    speakable: null,
    format: 'pcm',
    ledger,
    charge: { requestId: `req_${account.id}`, accountId: account.id, keyId: 'key_0123456789ab' },
    logger: createLogger('silent'),
    label: 'test speech',
  };
  return { voice: new VoiceSession(setup), accountId: account.id };
}

const charged = async (accountId: string) => BALANCE - (await store.getAccount(accountId))!.balanceMicros;
const held = async (accountId: string) => (await store.getAccount(accountId))!.balanceMicros - (await store.availableMicros(accountId, Date.now()));

const word = fc.stringMatching(/^[a-zɛɔ]{1,9}$/u);
const text = fc
  .array(fc.tuple(word, fc.constantFrom(' ', ' ', ', ', '. ', '? ')), { minLength: 1, maxLength: 60 })
  .map((parts) => parts.map(([w, s]) => w + s).join(''));
/** A text and the pieces it is sent in (cut at any code unit boundary that does not split a character). */
const textInPieces = text.chain((t) =>
  fc.uniqueArray(fc.integer({ min: 1, max: Math.max(1, t.length - 1) }), { maxLength: 12 }).map((cuts) => {
    const points = [0, ...cuts.filter((c) => c < t.length).sort((a, b) => a - b), t.length];
    return {
      text: t,
      pieces: points
        .slice(1)
        .map((end, i) => t.slice(points[i], end))
        .filter(Boolean),
    };
  }),
);

describe('an utterance is charged exactly what was delivered', () => {
  it('for any pieces and any cut-off, charged per phrase or at the end; no hold stays', async () => {
    await fc.assert(
      fc.asyncProperty(textInPieces, fc.nat({ max: 40 }), fc.boolean(), fc.boolean(), async ({ pieces }, cutAfter, eager, closeUtterance) => {
        const { voice, accountId } = await voiceFor();
        const utterance = voice.open();
        for (const piece of pieces) await utterance.take(piece);
        await utterance.endInput();
        let items = 0;
        let delivered = 0;
        for await (const item of utterance.audio()) {
          if (items++ === cutAfter) break; // the listener left: what followed was never delivered
          delivered = item.charactersComplete;
          utterance.delivered(delivered);
          if (eager) await utterance.chargeDelivered();
        }
        // Closing the utterance itself (a barge-in) or its whole voice (the session ends) settles alike.
        await (closeUtterance ? utterance.close('interrupted') : voice.close('done'));
        expect(await charged(accountId)).toBe(delivered * PRICE);
        expect(await held(accountId)).toBe(0);
      }),
      { numRuns: RUNS },
    );
  }, 120_000);

  it('a text spoken to its end is charged its characters, whatever its pieces', async () => {
    await fc.assert(
      fc.asyncProperty(textInPieces, async ({ text: whole, pieces }) => {
        const { voice, accountId } = await voiceFor();
        const utterance = voice.open();
        for (const piece of pieces) await utterance.take(piece);
        await utterance.endInput();
        for await (const item of utterance.audio()) utterance.delivered(item.charactersComplete);
        await voice.close('done');
        const characters = chunkText(whole).reduce((n, c) => n + c.characters, 0);
        expect(await charged(accountId)).toBe(characters * PRICE);
      }),
      { numRuns: RUNS },
    );
  }, 120_000);
});

describe('the hold and the limits', () => {
  it('a piece is refused exactly when it is too long, or would leave more than the limit waiting', () => {
    fc.assert(
      fc.property(fc.nat({ max: 12_000 }), fc.nat({ max: 6_000 }), (length, waiting) => {
        const refuse = () => checkTextLimits('ɛ'.repeat(length), waiting);
        if (length > MAX_MESSAGE_CHARACTERS) expect(refuse).toThrow(TextTooLongError);
        else if (waiting + length > MAX_PENDING_CHARACTERS) expect(refuse).toThrow(SpeechLimitError);
        else expect(refuse).not.toThrow();
      }),
    );
  });

  it('the hold is the price of the phrases released; admitted text never leaves more than the limit waiting', async () => {
    const piece = fc.array(fc.tuple(word, fc.constantFrom(' ', '. ')), { minLength: 1, maxLength: 400 }).map((parts) => parts.map(([w, s]) => w + s).join(''));
    await fc.assert(
      fc.asyncProperty(fc.array(piece, { minLength: 1, maxLength: 12 }), async (pieces) => {
        const { voice, accountId } = await voiceFor();
        const utterance = voice.open();
        const mirror = new TextPhraseSplitter();
        let released = 0;
        for (const p of pieces) {
          try {
            voice.admit(p);
          } catch (err) {
            expect(err).toBeInstanceOf(SpeechLimitError);
            expect(voice.waitingCharacters + [...p].length).toBeGreaterThan(MAX_PENDING_CHARACTERS);
            continue;
          }
          await utterance.take(p);
          released += mirror.push(p).reduce((n, c) => n + c.characters, 0);
          expect(voice.waitingCharacters).toBeLessThanOrEqual(MAX_PENDING_CHARACTERS);
          expect(await held(accountId)).toBe(released * PRICE);
        }
        await voice.close('done');
        expect(await held(accountId)).toBe(0);
        expect(await charged(accountId)).toBe(0);
      }),
      { numRuns: RUNS },
    );
  }, 120_000);
});
