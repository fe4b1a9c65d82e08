/** GET /models and /models/{id} through the real openai SDK, on both prefixes, on both sides of the retirement date. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { startTestServer, type TestServer } from '../helpers/test-server.js';

let now = new Date('2026-11-22T10:00:00Z');
let t: TestServer;

beforeAll(async () => {
  t = await startTestServer({ clock: () => now });
});
afterAll(() => t.close());

for (const prefix of ['/compat/v1', '/openai/v1']) {
  describe(`models under ${prefix}`, () => {
    const client = () => new OpenAI({ apiKey: t.apiKey, baseURL: t.baseUrl + prefix, maxRetries: 0 });

    it('lists the three canonical models with the documented defaults', async () => {
      now = new Date('2026-11-22T10:00:00Z');
      const ids: string[] = [];
      for await (const model of client().models.list()) {
        ids.push(model.id);
        expect(model).toMatchObject({ object: 'model', created: 1735689600, owned_by: 'djelia' });
      }
      expect(ids).toEqual(['sunjata-1', 'jifili-1', 'banjugu-1']);
    });

    it('retrieving an alias reports the canonical id', async () => {
      expect((await client().models.retrieve('whisper-1')).id).toBe('sunjata-1');
      expect((await client().models.retrieve('djelia-asr-v3')).id).toBe('sunjata-1');
      expect((await client().models.retrieve('tts-1-hd')).id).toBe('jifili-1');
      expect((await client().models.retrieve('djelia-translate-v1')).id).toBe('banjugu-1');
      expect((await client().models.retrieve('jifili-1')).id).toBe('jifili-1');
    });

    it('an unknown id is NotFoundError with code model_not_found', async () => {
      const err = await client()
        .models.retrieve('gpt-9')
        .catch((e) => e);
      expect(err).toBeInstanceOf(OpenAI.NotFoundError);
      expect(err.code).toBe('model_not_found');
      expect(err.param).toBe('model');
      expect(err.type).toBe('invalid_request_error');
    });

    it('a legacy id is 404 model_not_found after the retirement date', async () => {
      now = new Date('2026-09-20T00:00:00Z');
      const err = await client()
        .models.retrieve('djelia-tts-v1')
        .catch((e) => e);
      expect(err).toBeInstanceOf(OpenAI.NotFoundError);
      expect(err.code).toBe('model_not_found');
      const ids: string[] = [];
      for await (const m of client().models.list()) ids.push(m.id);
      expect(ids).not.toContain('djelia-asr-v1');
    });

    it('legacy ids are listed and retrievable the day before the retirement date', async () => {
      now = new Date('2026-09-19T23:59:59Z');
      const ids: string[] = [];
      for await (const m of client().models.list()) ids.push(m.id);
      expect(ids).toEqual(expect.arrayContaining(['djelia-asr-v1', 'djelia-asr-v2', 'djelia-tts-v1', 'djelia-tts-v2', 'djelia-translate-v2']));
      expect((await client().models.retrieve('djelia-asr-v2')).id).toBe('djelia-asr-v2');
      now = new Date('2026-11-22T10:00:00Z');
    });
  });
}
