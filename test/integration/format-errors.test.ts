/**
 * One scheme for a `response_format` that cannot be served, on every primary route: the envelope names
 * `response_format` as its param, and its message says whether the name is a format at all (quoting it) or
 * one the model does not serve, and lists what is served. The status and code are the ones the API is
 * documented with: jifili-1 answers 422 invalid_request for every name it does not serve; the legacy speech
 * models, transcriptions and translations answer 400 invalid_value. Checked for every name in the lists and
 * for random names. (The native routes keep their own 422 `detail` scheme: native/speech-validation.test.ts.)
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { SPEECH_FORMATS } from '../../src/codecs/types.js';
import { JIFILI_FORMATS, LEGACY_FORMATS } from '../../src/api/compat/speech-rules.js';
import { TRANSCRIPTION_FORMATS } from '../../src/api/schemas/audio.js';

const RUNS = Number(process.env.KUMA_PROPERTY_RUNS ?? 40);
const KNOWN = new Set<string>([...SPEECH_FORMATS, ...TRANSCRIPTION_FORMATS]);

let t: TestServer;
beforeAll(async () => {
  // No models are needed: the format is refused before any engine is asked. Before the retirement date, so
  // the legacy models are still served.
  t = await startTestServer({ clock: () => new Date('2026-09-01T00:00:00Z') });
});
afterAll(() => t.close());

interface Envelope {
  status: number;
  code: string;
  param: string;
  message: string;
}

async function envelope(res: Response): Promise<Envelope> {
  const body = (await res.json()) as { error: { code: string; param: string; message: string } };
  return { status: res.status, code: body.error.code, param: body.error.param, message: body.error.message };
}

const speech = async (model: string, format: string) =>
  envelope(
    await fetch(`${t.baseUrl}/compat/v1/audio/speech`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, input: 'i ni ce', response_format: format }),
    }),
  );

const upload = async (route: 'transcriptions' | 'translations', format: string) => {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(64)]), 'a.wav');
  form.append('model', 'sunjata-1');
  form.append('response_format', format);
  return envelope(await fetch(`${t.baseUrl}/openai/v1/audio/${route}`, { method: 'POST', headers: { authorization: `Bearer ${t.apiKey}` }, body: form }));
};

const SPEECH_MODELS: Array<[string, readonly string[], number, string]> = [
  ['jifili-1', JIFILI_FORMATS, 422, 'invalid_request'],
  ['djelia-tts-v1', LEGACY_FORMATS, 400, 'invalid_value'],
  ['djelia-tts-v2', LEGACY_FORMATS, 400, 'invalid_value'],
];

describe('speech', () => {
  it.each(SPEECH_MODELS)('%s: a speech format it does not serve, naming the model and what it serves', async (model, served, status, code) => {
    for (const format of SPEECH_FORMATS.filter((f) => !served.includes(f))) {
      expect(await speech(model, format)).toEqual({
        status,
        code,
        param: 'response_format',
        message: `response_format: ${model} does not serve ${format}; ${model} serves ${served.join(', ')}.`,
      });
    }
  });

  it('a name that is no speech format: the same status and code per model, saying so and quoting it', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...SPEECH_MODELS),
        fc.oneof(fc.string({ minLength: 1, maxLength: 12 }), fc.constantFrom('MP3', 'ogg', 'json', 'srt', 'pcm_22050')),
        async ([model, served, status, code], format) => {
          fc.pre(!KNOWN.has(format) || (TRANSCRIPTION_FORMATS as readonly string[]).includes(format));
          expect(await speech(model, format)).toEqual({
            status,
            code,
            param: 'response_format',
            message: `response_format: ${JSON.stringify(format)} is not a speech format; ${model} serves ${served.join(', ')}.`,
          });
        },
      ),
      { numRuns: RUNS, seed: 808 },
    );
  });
});

describe('transcriptions and translations', () => {
  it('a name that is no transcript format is 400 invalid_value, quoting it and listing the formats', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.string({ minLength: 1, maxLength: 12 }), fc.constantFrom('mp3', 'JSON', 'verbose', 'ogg')), async (format) => {
        fc.pre(!(TRANSCRIPTION_FORMATS as readonly string[]).includes(format) && format.trim() !== '' && format !== 'null');
        expect(await upload('transcriptions', format)).toEqual({
          status: 400,
          code: 'invalid_value',
          param: 'response_format',
          message: `response_format: ${JSON.stringify(format)} is not a transcript format; use one of json, text, verbose_json, srt, vtt.`,
        });
        expect(await upload('translations', format)).toEqual({
          status: 400,
          code: 'invalid_value',
          param: 'response_format',
          message: `response_format: ${JSON.stringify(format)} is not a transcript format; translations answer json or text.`,
        });
      }),
      { numRuns: RUNS, seed: 809 },
    );
  });

  it('a transcript format translations do not serve is 400 invalid_value, saying why', async () => {
    for (const format of ['verbose_json', 'srt', 'vtt']) {
      const refused = await upload('translations', format);
      expect([refused.status, refused.code, refused.param]).toEqual([400, 'invalid_value', 'response_format']);
      expect(refused.message).toMatch(new RegExp(`^response_format: ${format} is not available for translations.*use json or text\\.$`));
    }
  });
});
