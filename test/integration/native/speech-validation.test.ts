/**
 * Validation of the native TTS routes: every rule answers 422 with a `detail` array of pydantic-worded
 * entries (every problem at once), text the voice cannot say is 400 `{detail}`, and random JSON bodies get
 * 200, 400 or 422 with a well-formed body — never a 5xx, never a charge for a refusal.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../../helpers/test-server.js';
import { chargesSettled } from '../../helpers/settled.js';
import { startNativeServer } from './sdk-axios.js';

let t: TestServer;
beforeAll(async () => {
  t = await startNativeServer();
}, 120_000);
afterAll(() => t.close());

const post = (path: string, body: string, apiKey = t.apiKey) =>
  fetch(`${t.baseUrl}${path}`, { method: 'POST', headers: { 'x-api-key': apiKey, 'content-type': 'application/json' }, body });
const detailOf = async (res: Response) => {
  expect(res.status).toBe(422);
  return ((await res.json()) as { detail: Array<{ loc: unknown[]; msg: string; type: string }> }).detail.map(({ loc, msg, type }) => ({ loc, msg, type }));
};

describe('422 detail entries', () => {
  it.each([
    ['/v1/models/tts', {}, [{ loc: ['body', 'text'], msg: 'Field required', type: 'missing' }]],
    ['/v1/models/tts', { text: '' }, [{ loc: ['body', 'text'], msg: 'String should have at least 1 character', type: 'string_too_short' }]],
    ['/v1/models/tts', { text: 'a', speaker: 5 }, [{ loc: ['body', 'speaker'], msg: 'Input should be less than or equal to 4', type: 'less_than_equal' }]],
    [
      '/v1/models/tts',
      { text: 'a', speaker: -1 },
      [{ loc: ['body', 'speaker'], msg: 'Input should be greater than or equal to 0', type: 'greater_than_equal' }],
    ],
    [
      '/v1/models/tts',
      { text: 'a', speaker: 1.5 },
      [{ loc: ['body', 'speaker'], msg: 'Input should be a valid integer, got a number with a fractional part', type: 'int_from_float' }],
    ],
    // An integer field given a string: pydantic's int_parsing (zod alone would say a number was expected).
    [
      '/v1/models/tts',
      { text: 'a', speaker: 'one' },
      [{ loc: ['body', 'speaker'], msg: 'Input should be a valid integer, unable to parse string as an integer', type: 'int_parsing' }],
    ],
    ['/v1/models/tts', { text: 5 }, [{ loc: ['body', 'text'], msg: 'Input should be a valid string', type: 'string_type' }]],
    ['/v2/models/tts', { text: 'a' }, [{ loc: ['body', 'description'], msg: 'Field required', type: 'missing' }]],
    [
      '/v2/models/tts',
      { text: 'a', description: 'M'.repeat(501) },
      [{ loc: ['body', 'description'], msg: 'String should have at most 500 characters', type: 'string_too_long' }],
    ],
    [
      '/v2/models/tts',
      { text: 'ɛ'.repeat(1001), description: 'Moussa' },
      [{ loc: ['body', 'text'], msg: 'String should have at most 1000 characters', type: 'string_too_long' }],
    ],
    [
      '/v2/models/tts',
      { text: 'a', description: 'Moussa', format: 'flac' },
      [{ loc: ['body', 'format'], msg: "Input should be 'mp3', 'wav', 'wav_8k' or 'ulaw_8k'", type: 'enum' }],
    ],
    [
      '/v2/models/tts/stream',
      { text: 'a', description: 'Moussa', chunk_size: 0.05 },
      [{ loc: ['body', 'chunk_size'], msg: 'Input should be greater than or equal to 0.1', type: 'greater_than_equal' }],
    ],
    [
      '/v2/models/tts/stream',
      { text: 'a', description: 'Moussa', chunk_size: 2.5 },
      [{ loc: ['body', 'chunk_size'], msg: 'Input should be less than or equal to 2', type: 'less_than_equal' }],
    ],
    [
      '/v2/models/tts/stream',
      { text: 'a', description: 'Moussa', chunk_size: 'big' },
      [{ loc: ['body', 'chunk_size'], msg: 'Input should be a valid number, unable to parse string as a number', type: 'float_parsing' }],
    ],
    [
      '/v2/models/tts/stream',
      [],
      [{ loc: ['body'], msg: 'Input should be a valid dictionary or object to extract fields from', type: 'model_attributes_type' }],
    ],
    ['/v1/models/tts', 'text', [{ loc: ['body'], msg: 'Input should be a valid dictionary or object to extract fields from', type: 'model_attributes_type' }]],
  ])('%s %j', async (path, body, entries) => {
    expect(await detailOf(await post(path, JSON.stringify(body)))).toEqual(entries);
  });

  it('every problem of a body is listed, not only the first', async () => {
    const entries = await detailOf(await post('/v2/models/tts/stream', JSON.stringify({ description: 7, format: 'ogg', chunk_size: 9 })));
    expect(entries.map((e) => e.loc)).toEqual([
      ['body', 'text'],
      ['body', 'description'],
      ['body', 'format'],
      ['body', 'chunk_size'],
    ]);
  });

  it('a body that is not JSON is json_invalid (at its position where the parser names one); an empty body is a missing body', async () => {
    for (const broken of ['{"text": ', '{"text": x}', "{'text': 'a'}"]) {
      const [entry, ...more] = await detailOf(await post('/v1/models/tts', broken));
      expect(more).toEqual([]);
      expect([entry!.loc[0], typeof entry!.loc[1], entry!.msg, entry!.type]).toEqual(['body', 'number', 'JSON decode error', 'json_invalid']);
    }
    expect(await detailOf(await post('/api/v2/models/tts', ''))).toEqual([{ loc: ['body'], msg: 'Field required', type: 'missing' }]);
  });

  it('text the voice cannot say is 400 {detail} naming the field text', async () => {
    const res = await post('/v1/models/tts', JSON.stringify({ text: '🙂' }));
    expect(res.status).toBe(400);
    expect(((await res.json()) as { detail: string }).detail).toMatch(/^text: djelia-tts-v1 cannot pronounce/);
    const blank = await post('/v2/models/tts', JSON.stringify({ text: '   ', description: 'Moussa' }));
    expect(blank.status).toBe(400);
  });

  it('extra fields are ignored (the JS SDK sends chunk_size to /v2/models/tts)', async () => {
    const res = await post('/v2/models/tts', JSON.stringify({ text: 'a', description: 'Moussa', chunk_size: 99, voice: 'x', extra: { deep: [1] } }));
    expect(res.status).toBe(200);
    await res.arrayBuffer();
  });
});

describe('random JSON bodies', () => {
  const field = fc.oneof(
    fc.string({ maxLength: 12 }),
    fc.integer({ min: -3, max: 8 }),
    fc.double({ min: -1, max: 3, noNaN: true }),
    fc.constant(null),
    fc.boolean(),
    fc.array(fc.integer(), { maxLength: 2 }),
  );
  const body = fc.oneof(
    fc.record(
      {
        text: fc.oneof(fc.constantFrom('a', 'i ni ce', '', ' '), field),
        speaker: field,
        description: fc.oneof(fc.constantFrom('Moussa', 'Sekou'), field),
        format: fc.oneof(fc.constantFrom('mp3', 'wav', 'wav_8k', 'ulaw_8k'), field),
        chunk_size: field,
      },
      { requiredKeys: [] },
    ),
    fc.jsonValue({ maxDepth: 2 }),
  );
  it('are answered 200, 400 or 422 with a well-formed body, never a 5xx, and refusals charge nothing', async () => {
    const account = await t.newAccount(100_000_000);
    let served = 0;
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('/v1/models/tts', '/v2/models/tts', '/api/v2/models/tts/stream'), body, async (path, value) => {
        const res = await post(path, JSON.stringify(value), account.apiKey);
        expect([200, 400, 422]).toContain(res.status);
        if (res.status === 200) {
          served++;
          expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(0);
          return;
        }
        const parsed = (await res.json()) as { detail: unknown };
        if (res.status === 400) expect(typeof parsed.detail).toBe('string');
        else {
          expect(Array.isArray(parsed.detail)).toBe(true);
          for (const entry of parsed.detail as Array<Record<string, unknown>>) {
            expect(entry.loc).toEqual(expect.arrayContaining(['body']));
            expect(typeof entry.msg).toBe('string');
            expect(typeof entry.type).toBe('string');
          }
        }
      }),
      { numRuns: 60 },
    );
    // One row per answered request (200), none for the refused ones.
    await chargesSettled(t); // charged once the answer was delivered
    expect((await t.server.store.listUsage({ accountId: account.accountId })).length).toBe(served);
  }, 60_000);
});
