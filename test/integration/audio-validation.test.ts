/** Every validation rule of the transcription, speech-translation and chat endpoints: status, type, code, param; and the ignored fields. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { spokenPhrases, wavBytes } from '../helpers/audio.js';

const speech = wavBytes(spokenPhrases(['i ni ce']).samples, 16000);
let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ config: { modelsManifest: 'models/kuma-models.json', demoPack: false, maxAudioSeconds: 5, maxUploadBytes: 400_000 } });
  await t.server.enginesReady;
}, 120_000);
afterAll(() => t.close());

type Fields = Record<string, string | string[]>;
function form(fields: Fields, file: Uint8Array | null = speech, name = 'speech.wav'): FormData {
  const f = new FormData();
  if (file) f.append('file', new Blob([file]), name);
  for (const [k, v] of Object.entries(fields)) for (const value of [v].flat()) f.append(k, value);
  return f;
}
const post = (path: string, body: FormData | string, apiKey = t.apiKey, headers: Record<string, string> = {}) =>
  fetch(`${t.baseUrl}/openai/v1${path}`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, ...headers }, body });
const chat = (body: unknown, apiKey = t.apiKey) => post('/chat/completions', JSON.stringify(body), apiKey, { 'content-type': 'application/json' });

async function expectError(res: Response, status: number, code: string, param: string | null, type = 'invalid_request_error') {
  const body = (await res.json()) as any;
  expect({ status: res.status, ...body.error, message: undefined }).toEqual({ status, type, code, param, message: undefined });
  return body.error.message as string;
}

describe('POST /audio/transcriptions validation', () => {
  it('file: missing, empty, not audio', async () => {
    expect(await expectError(await post('/audio/transcriptions', form({ model: 'sunjata-1' }, null)), 400, 'missing_required_parameter', 'file')).toBe(
      'file: Field required',
    );
    await expectError(await post('/audio/transcriptions', form({}, new Uint8Array(0))), 400, 'invalid_value', 'file');
    const msg = await expectError(
      await post('/audio/transcriptions', form({}, new TextEncoder().encode('not audio at all, just text'.repeat(20)), 'clip.mp3')),
      400,
      'invalid_value',
      'file',
    );
    expect(msg).toMatch(/not|unsupported|recogni/i);
  });

  it("an upload that does not decode is the client's error: logged at info with its reason, never at error", async () => {
    for (const [bytes, name] of [
      [new TextEncoder().encode('not audio at all, just text'.repeat(20)), 'clip.mp3'],
      [new Uint8Array([...new TextEncoder().encode('fLaC'), ...Array.from({ length: 400 }, (_, i) => (i * 37) % 256)]), 'bad.flac'],
      [wavBytes(new Float32Array(16000 * 6), 16000), 'long.wav'],
    ] as const) {
      const res = await post('/audio/transcriptions', form({ model: 'sunjata-1' }, bytes, name));
      expect([400, 413]).toContain(res.status);
      await res.arrayBuffer();
      const id = res.headers.get('x-request-id')!;
      const lines = t.logs.filter((l) => l.includes(id)).map((l) => JSON.parse(l) as { level: number; msg: string; code?: string });
      expect(lines.filter((l) => l.level >= 50)).toEqual([]);
      expect(lines.find((l) => l.msg === 'request refused')).toMatchObject({ level: 30, code: res.status === 413 ? 'audio_too_large' : 'invalid_value' });
    }
  });

  it('file: over the duration limit is 413 audio_too_large; over the upload size too', async () => {
    const long = wavBytes(new Float32Array(16000 * 6), 16000);
    await expectError(await post('/audio/transcriptions', form({}, long)), 413, 'audio_too_large', 'file');
    await expectError(await post('/audio/transcriptions', form({}, new Uint8Array(500_000))), 413, 'audio_too_large', 'file');
  });

  it('response_format, stream and temperature values are checked', async () => {
    await expectError(await post('/audio/transcriptions', form({ response_format: 'docx' })), 400, 'invalid_value', 'response_format');
    for (const format of ['verbose_json', 'srt', 'vtt']) {
      await expectError(await post('/audio/transcriptions', form({ response_format: format, stream: 'true' })), 400, 'invalid_value', 'stream');
    }
    await expectError(await post('/audio/transcriptions', form({ stream: 'maybe' })), 400, 'invalid_value', 'stream');
    await expectError(await post('/audio/transcriptions', form({ temperature: '1.5' })), 400, 'invalid_value', 'temperature');
    await expectError(await post('/audio/transcriptions', form({ temperature: 'warm' })), 400, 'invalid_value', 'temperature');
  });

  it('model: unknown is 404 model_not_found, another capability is 400', async () => {
    await expectError(await post('/audio/transcriptions', form({ model: 'whisper-9' })), 404, 'model_not_found', 'model');
    await expectError(await post('/audio/transcriptions', form({ model: 'jifili-1' })), 400, 'invalid_value', 'model');
  });

  it('accepts and ignores language, prompt and timestamp_granularities[]', async () => {
    const res = await post(
      '/audio/transcriptions',
      form({ language: 'fr', prompt: 'anything', 'timestamp_granularities[]': ['word', 'segment'], temperature: '0.2' }),
    );
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).text).toBe('i ni ce');
  });

  it('a JSON body is 415', async () => {
    await expectError(await post('/audio/transcriptions', '{}', t.apiKey, { 'content-type': 'application/json' }), 415, 'unsupported_content_type', null);
  });

  it('402 before any work when the balance cannot cover the audio; nothing charged', async () => {
    for (const balance of [0, 50]) {
      const poor = await t.newAccount(balance); // 1.2 s of audio costs 120 micros
      await expectError(await post('/audio/transcriptions', form({}), poor.apiKey), 402, 'insufficient_quota', null, 'insufficient_quota');
      expect(await t.server.store.listUsage({ accountId: poor.accountId })).toEqual([]);
    }
  });
});

describe('POST /audio/translations validation', () => {
  it('timing formats are 400: timings would not match the translated words', async () => {
    for (const format of ['srt', 'vtt', 'verbose_json']) {
      const msg = await expectError(await post('/audio/translations', form({ response_format: format })), 400, 'invalid_value', 'response_format');
      expect(msg).toMatch(/timings/);
    }
  });

  it('language must be eng_Latn or fra_Latn', async () => {
    await expectError(await post('/audio/translations', form({ language: 'bam_Latn' })), 400, 'invalid_value', 'language');
    await expectError(await post('/audio/translations', form({ language: 'de' })), 400, 'invalid_value', 'language');
  });
});

describe('POST /chat/completions validation', () => {
  const ok = { model: 'banjugu-1', messages: [{ role: 'user', content: 'ji' }], djelia: { source_language: 'bam_Latn', target_language: 'fra_Latn' } };

  it('the djelia object is required, with the real service wording', async () => {
    const { djelia: _omit, ...noExtension } = ok;
    expect(await expectError(await chat(noExtension), 400, 'missing_required_parameter', 'djelia')).toBe('djelia: Field required');
  });

  it('languages must be supported and different', async () => {
    await expectError(
      await chat({ ...ok, djelia: { source_language: 'bam_Latn', target_language: 'bam_Latn' } }),
      400,
      'invalid_value',
      'djelia.target_language',
    );
    await expectError(
      await chat({ ...ok, djelia: { source_language: 'deu_Latn', target_language: 'fra_Latn' } }),
      400,
      'invalid_value',
      'djelia.source_language',
    );
    await expectError(await chat({ ...ok, djelia: { source_language: 'bam_Latn' } }), 400, 'missing_required_parameter', 'djelia.target_language');
  });

  it('messages are required and the last user message must have text', async () => {
    await expectError(await chat({ ...ok, messages: undefined }), 400, 'missing_required_parameter', 'messages');
    await expectError(await chat({ ...ok, messages: [] }), 400, 'invalid_value', 'messages');
    await expectError(await chat({ ...ok, messages: [{ role: 'system', content: 'x' }] }), 400, 'invalid_value', 'messages');
    await expectError(
      await chat({ ...ok, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] }),
      400,
      'invalid_value',
      'messages',
    );
  });

  it('model: unknown 404, another capability 400; stream must be a boolean', async () => {
    await expectError(await chat({ ...ok, model: 'gpt-9' }), 404, 'model_not_found', 'model');
    await expectError(await chat({ ...ok, model: 'sunjata-1' }), 400, 'invalid_value', 'model');
    await expectError(await chat({ ...ok, stream: 'yes' }), 400, 'invalid_value', 'stream');
  });

  it('every field of the ignore list is accepted and never rejects', async () => {
    const res = await chat({
      ...ok,
      messages: [{ role: 'user', content: 'ji', name: 42 }],
      temperature: 9,
      top_p: -1,
      n: 7,
      max_tokens: 'lots',
      max_completion_tokens: 0,
      stop: ['x', 'y'],
      presence_penalty: 5,
      frequency_penalty: 'high',
      logit_bias: { 50256: -100 },
      seed: 'abc',
      logprobs: true,
      top_logprobs: 99,
      response_format: { type: 'json_object' },
      tools: [{ type: 'function' }],
      tool_choice: 'required',
      user: { id: 1 },
      store: 'yes',
      metadata: [1, 2],
      service_tier: 'flex',
      stream_options: { include_usage: true },
      something_new: true,
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).choices[0].message.content).toBe('eau');
  });

  it('malformed JSON is 400 invalid_json', async () => {
    await expectError(await post('/chat/completions', '{"model":', t.apiKey, { 'content-type': 'application/json' }), 400, 'invalid_json', null);
  });
});
