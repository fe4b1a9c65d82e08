/**
 * POST /audio/translations and POST /chat/completions through the openai SDK on both prefixes, with the
 * demo models: both target languages and formats, chat plain and streamed, the usage each reports equal
 * to the ledger, and a failed translation step leaving only the transcription charged.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { chargesSettled } from '../helpers/settled.js';
import { spokenPhrases, wavBytes } from '../helpers/audio.js';
import { EngineRegistry } from '../../src/engines/engine-registry.js';

// Known glossary sentence of the demo translator (word by word; unknown words are copied).
const SPOKEN = 'n fa ni n ba bɛ malo dun';
const IN_FRENCH = 'je père ni je mère bɛ riz manger';
const IN_ENGLISH = 'I father ni I mother bɛ rice eat';
const audio = spokenPhrases([SPOKEN]);
const upload = () => toFile(wavBytes(audio.samples, 16000), 'speech.wav');
const seconds = Math.ceil(audio.seconds * 1000) / 1000;

let t: TestServer;
// Before the retirement date the legacy models still serve (SPEC §9); one test moves past it.
let now = new Date('2026-09-01T12:00:00Z');
beforeAll(async () => {
  t = await startTestServer({ clock: () => now, config: { modelsManifest: 'models/kuma-models.json', demoPack: false } });
  await t.server.enginesReady;
}, 120_000);
afterAll(() => t.close());

for (const prefix of ['/compat/v1', '/openai/v1']) {
  describe(`under ${prefix}`, () => {
    const client = () => new OpenAI({ apiKey: t.apiKey, baseURL: t.baseUrl + prefix, maxRetries: 0 });

    it('translates speech to English by default (json) and to French (text)', async () => {
      expect((await client().audio.translations.create({ file: await upload(), model: 'sunjata-1' })).text).toBe(IN_ENGLISH);
      const french = await client().audio.translations.create({
        file: await upload(),
        model: 'sunjata-1',
        response_format: 'text',
        language: 'fra_Latn',
      } as any);
      expect(french).toBe(IN_FRENCH);
    });

    it('translates text with chat completions, counting characters as usage', async () => {
      const res = await client().chat.completions.create({
        model: 'banjugu-1',
        messages: [
          { role: 'system', content: 'ignored' },
          { role: 'user', content: 'malo' },
          { role: 'assistant', content: 'x' },
          {
            role: 'user',
            content: [
              { type: 'text', text: SPOKEN },
              { type: 'image_url', image_url: { url: 'https://x/y.png' } },
            ],
          },
        ],
        temperature: 0.7,
        max_tokens: 5,
        tools: [{ type: 'function', function: { name: 'f', parameters: {} } }],
        user: 'u1',
        // @ts-expect-error the extension object is not in the SDK's types
        djelia: { source_language: 'bam_Latn', target_language: 'fra_Latn' },
      });
      expect(res).toMatchObject({
        object: 'chat.completion',
        model: 'banjugu-1',
        choices: [{ index: 0, message: { role: 'assistant', content: IN_FRENCH }, finish_reason: 'stop', logprobs: null }],
      });
      expect(res.usage).toEqual({ prompt_tokens: [...SPOKEN].length, completion_tokens: 0, total_tokens: [...SPOKEN].length });
    });

    const streamParams = (extra: object = {}) => ({
      model: 'djelia-translate-v1',
      messages: [{ role: 'user' as const, content: SPOKEN }],
      stream: true as const,
      djelia: { source_language: 'bam_Latn', target_language: 'eng_Latn' }, // the extension object, not in the SDK's types
      ...extra,
    });

    it('streams chat: role, one content delta with the whole translation, stop, [DONE]; no usage unless asked', async () => {
      for (const extra of [{}, { stream_options: { include_usage: false } }, { stream_options: null }]) {
        const stream = await client().chat.completions.create(streamParams(extra));
        const chunks: any[] = [];
        for await (const chunk of stream) chunks.push(chunk);
        expect(chunks.map((c) => c.choices[0].delta)).toEqual([{ role: 'assistant', content: '' }, { content: IN_ENGLISH }, {}]);
        expect(chunks.map((c) => c.choices[0].finish_reason)).toEqual([null, null, 'stop']);
        expect(chunks.every((c) => c.object === 'chat.completion.chunk' && c.model === 'banjugu-1')).toBe(true);
        expect(chunks.filter((c) => 'usage' in c)).toEqual([]);
      }
    });

    it('streams usage as OpenAI does with include_usage: null on every chunk, then a last chunk with no choices', async () => {
      const stream = await client().chat.completions.create(streamParams({ stream_options: { include_usage: true } }));
      const chunks: any[] = [];
      for await (const chunk of stream) chunks.push(chunk);
      expect(chunks.map((c) => c.choices.map((choice: any) => choice.finish_reason))).toEqual([[null], [null], ['stop'], []]);
      expect(chunks.slice(0, 3).map((c) => c.usage)).toEqual([null, null, null]);
      expect(chunks[3]).toMatchObject({ object: 'chat.completion.chunk', model: 'banjugu-1', id: chunks[0].id, choices: [] });
      expect(chunks[3].usage).toEqual({ prompt_tokens: [...SPOKEN].length, completion_tokens: 0, total_tokens: [...SPOKEN].length });
    });
  });
}

describe('ledger', () => {
  it('a speech translation writes two records: seconds of audio and characters of the transcript', async () => {
    const account = await t.newAccount(10_000_000);
    const client = new OpenAI({ apiKey: account.apiKey, baseURL: `${t.baseUrl}/openai/v1`, maxRetries: 0 });
    const { response } = await client.audio.translations.create({ file: await upload(), model: 'sunjata-1' }).withResponse();
    await chargesSettled(t); // charged once the answer was delivered
    const rows = await t.server.store.listUsage({ accountId: account.accountId });
    expect(rows.map((r) => [r.requestId, r.model, r.unit, r.quantity, r.costMicros])).toEqual([
      [response.headers.get('x-request-id'), 'sunjata-1', 'second', seconds, Math.ceil(seconds * 100 - 1e-9)],
      [response.headers.get('x-request-id'), 'banjugu-1', 'character', [...SPOKEN].length, [...SPOKEN].length * 20],
    ]);
  });

  it('chat usage equals the ledger row, in characters; the token-billed legacy model reports and bills tokens', async () => {
    const account = await t.newAccount(10_000_000);
    const client = new OpenAI({ apiKey: account.apiKey, baseURL: `${t.baseUrl}/compat/v1`, maxRetries: 0 });
    const body = (model: string) => ({
      model,
      messages: [{ role: 'user' as const, content: SPOKEN }],
      djelia: { source_language: 'bam_Latn', target_language: 'eng_Latn' },
    });
    const chars = await client.chat.completions.create(body('banjugu-1') as any);
    const tokens = await client.chat.completions.create(body('djelia-translate-v2') as any);
    await chargesSettled(t); // charged once the answer was delivered
    const rows = await t.server.store.listUsage({ accountId: account.accountId });
    expect(rows.map((r) => [r.model, r.unit, r.quantity])).toEqual([
      ['banjugu-1', 'character', chars.usage!.total_tokens],
      ['djelia-translate-v2', 'token', tokens.usage!.total_tokens],
    ]);
    expect(tokens.usage!.prompt_tokens).toBeGreaterThan(0);
    expect(tokens.usage!.completion_tokens).toBeGreaterThan(0);
  });

  it('a legacy model answers 404 model_not_found from its retirement date, and nothing is charged', async () => {
    const account = await t.newAccount(10_000_000);
    const client = new OpenAI({ apiKey: account.apiKey, baseURL: `${t.baseUrl}/compat/v1`, maxRetries: 0 });
    now = new Date('2026-09-20T00:00:00Z');
    try {
      const err = await client.chat.completions
        .create({
          model: 'djelia-translate-v2',
          messages: [{ role: 'user', content: SPOKEN }],
          djelia: { source_language: 'bam_Latn', target_language: 'eng_Latn' },
        } as any)
        .catch((e) => e);
      expect(err).toBeInstanceOf(OpenAI.NotFoundError);
      expect(err.code).toBe('model_not_found');
      const asr = await client.audio.transcriptions.create({ file: await upload(), model: 'djelia-asr-v2' }).catch((e) => e);
      expect(asr.code).toBe('model_not_found');
      expect(await t.server.store.listUsage({ accountId: account.accountId })).toEqual([]);
    } finally {
      now = new Date('2026-09-01T12:00:00Z');
    }
  });
});

describe('a translation step that fails', () => {
  let failing: TestServer;
  let engines: EngineRegistry;
  beforeAll(async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-failing-mt-'));
    const manifest = path.join(dir, 'manifest.json');
    fs.writeFileSync(
      manifest,
      JSON.stringify({
        models: [
          { id: 'sunjata-1', engine: 'ctc-wav2vec2', dir: path.resolve('models/demo/ctc-wav2vec2') },
          { id: 'banjugu-1', engine: 'custom', dir: path.resolve('test/fixtures/engines'), options: { module: 'failing-translator.ts' } },
        ],
      }),
    );
    engines = EngineRegistry.fromManifest(manifest, 'djelia', { intraOpThreads: 1, interOpThreads: 1 });
    failing = await startTestServer({ engines });
    await failing.server.enginesReady;
  }, 120_000);
  afterAll(async () => {
    await failing.close();
    await engines.close();
  });

  it('fails the request cleanly and leaves only the transcription charged', async () => {
    const client = new OpenAI({ apiKey: failing.apiKey, baseURL: `${failing.baseUrl}/openai/v1`, maxRetries: 0 });
    const err = await client.audio.translations.create({ file: await upload(), model: 'sunjata-1' }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.InternalServerError);
    expect(err.error).toMatchObject({ type: 'api_error', code: 'server_error' });
    expect(JSON.stringify(err.error)).not.toContain('crashed');
    const rows = await failing.server.store.listUsage({ accountId: failing.accountId });
    expect(rows.map((r) => [r.model, r.unit, r.quantity])).toEqual([['sunjata-1', 'second', seconds]]);
  });
});
