/**
 * The native surface's exchanges for the OpenAPI contract test. Native paths are absolute (their prefixes
 * are '' and '/api'), and each case runs under both. The main server's clock is before the retirement date
 * (routes served, deprecated), the bare server's is the real one (past the default date: every native route
 * answers 410).
 */
import { NATIVE_ROUTES } from '../../src/api/native/native-paths.js';
import type { ContractCase } from './openapi-contract-cases.js';

const OTHER_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** Both native prefixes of one case. */
export function underNativePrefixes(c: ContractCase): ContractCase[] {
  return ['', '/api'].map((prefix) => ({ ...c, path: prefix + c.path, absolute: true, name: `${c.name} (${prefix || 'no prefix'})` }));
}

/** A method a native path does not serve: 405 while served, 410 once retired. */
export function nativeMethodGuardCases(): ContractCase[] {
  return NATIVE_ROUTES.flatMap((route) =>
    OTHER_METHODS.filter((method) => method !== route.method).flatMap((method) => {
      const operation = `${method.toLowerCase()}${route.path
        .split(/[/-]/)
        .filter(Boolean)
        .map((p) => p[0]!.toUpperCase() + p.slice(1))
        .join('')}NotServed`;
      return [
        ...underNativePrefixes({ name: `${method} ${route.path} while served`, operation, method, path: route.path, status: 405 }),
        ...underNativePrefixes({ name: `${method} ${route.path} once retired`, operation, method, path: route.path, status: 410, server: 'bare' }),
      ];
    }),
  );
}

interface Keys {
  key: () => string;
  brokeKey: () => string;
  limitedKey: () => string;
  bareKey: () => string;
}

/**
 * The native TTS, translation and supported-languages routes: each success media type, each error status
 * (x-api-key only), both prefixes; on the bare server (past the retirement date) each answers 410.
 */
export function nativeSpeechTranslateCases({ key, brokeKey, limitedKey, bareKey }: Keys): ContractCase[] {
  const apiKey = (k: () => string) => () => ({ 'x-api-key': k(), 'content-type': 'application/json' });
  const post =
    (operation: string, path: string) =>
    (name: string, body: unknown, status: number, extra: Partial<ContractCase> = {}): ContractCase[] =>
      underNativePrefixes({
        name,
        operation,
        method: 'POST',
        path,
        headers: apiKey(extra.server === 'bare' ? bareKey : key),
        body: () => JSON.stringify(body),
        json: body,
        status,
        ...extra,
      });
  const raw = (contentType: string, body: string): Partial<ContractCase> => ({
    headers: () => ({ 'x-api-key': key(), 'content-type': contentType }),
    body: () => body,
    json: undefined,
  });
  const common = (
    op: (name: string, body: unknown, status: number, extra?: Partial<ContractCase>) => ContractCase[],
    valid: Record<string, unknown>,
    invalid: Record<string, unknown>,
    unspeakable: Record<string, unknown>,
  ) => [
    ...op('text with nothing to say or translate', unspeakable, 400),
    ...op('no key', valid, 401, { headers: () => ({ 'content-type': 'application/json' }) }),
    ...op('a Bearer header alone', valid, 401, { headers: () => ({ authorization: `Bearer ${key()}`, 'content-type': 'application/json' }) }),
    ...op('no balance', valid, 402, { headers: apiKey(brokeKey) }),
    ...op('over a rate limit', valid, 429, { headers: apiKey(limitedKey) }),
    ...op('a body over the JSON limit', null, 413, raw('application/json', JSON.stringify({ ...valid, pad: 'x'.repeat(70 * 1024) }))),
    ...op('an XML body (FastAPI: not an object)', null, 422, raw('application/xml', '<text/>')),
    ...op('a validation failure', invalid, 422, { requestValid: false }),
    ...op('once retired', valid, 410, { server: 'bare' }),
  ];

  const languages = (name: string, status: number, extra: Partial<ContractCase> = {}) =>
    underNativePrefixes({
      name,
      operation: 'nativeSupportedLanguages',
      method: 'GET',
      path: '/v1/models/translate/supported-languages',
      headers: apiKey(key),
      status,
      ...extra,
    });
  const translate = post('nativeTranslate', '/v1/models/translate');
  const ttsV1 = post('nativeTtsV1', '/v1/models/tts');
  const ttsV2 = post('nativeTtsV2', '/v2/models/tts');
  const ttsStream = post('nativeTtsV2Stream', '/v2/models/tts/stream');
  const v2 = { text: 'i ni ce', description: 'Seydou' };
  const formats = ['mp3', 'wav', 'wav_8k', 'ulaw_8k'];
  return [
    ...languages('the languages', 200),
    ...languages('no key', 401, { headers: () => ({}) }),
    ...languages('over a rate limit', 429, { headers: apiKey(limitedKey) }),
    ...languages('once retired', 410, { server: 'bare', headers: apiKey(bareKey) }),

    ...translate('a translation', { text: 'i ni ce', source: 'bam_Latn', target: 'fra_Latn' }, 200),
    ...common(
      translate,
      { text: 'i ni ce', source: 'bam_Latn', target: 'fra_Latn' },
      { text: 'i ni ce', source: 'bam_Latn', target: 'bam' },
      { text: '  ', source: 'bam_Latn', target: 'fra_Latn' },
    ),

    ...ttsV1('WAV, the default speaker', { text: 'i ni ce' }, 200, { responseFormat: 'wav' }),
    ...ttsV1('WAV, speaker 0', { text: 'i ni ce', speaker: 0 }, 200, { responseFormat: 'wav' }),
    ...common(ttsV1, { text: 'i ni ce' }, { text: 'i ni ce', speaker: 5 }, { text: '🙂' }),

    ...ttsV2('no format: mp3', v2, 200, { responseFormat: 'mp3' }),
    ...formats.flatMap((format) => ttsV2(`format ${format}`, { ...v2, format }, 200, { responseFormat: format })),
    ...common(ttsV2, v2, { text: 'i ni ce' }, { ...v2, text: '🙂' }),

    ...formats.flatMap((format) => ttsStream(`format ${format}, chunk_size 0.5`, { ...v2, format, chunk_size: 0.5 }, 200, { responseFormat: format })),
    ...common(ttsStream, v2, { ...v2, chunk_size: 3 }, { ...v2, text: '🙂' }),
  ];
}

/** What the transcribe cases need from the contract test (as casesFor's inputs). */
interface TranscribeInputs {
  audio: { speech: () => Blob; tooLong: () => Blob };
  key: () => string;
  brokeKey: () => string;
  limitedKey: () => string;
}

/**
 * POST /v1|/v2/models/transcribe[/stream] (transcribe-routes.ts): both bodies of each (segments, and with
 * translate_to_french the French), each error it answers, and the 410 once retired (the bare server).
 */
export function nativeTranscribeCases({ audio, key, brokeKey, limitedKey }: TranscribeInputs): ContractCase[] {
  const apiKey = (k: () => string) => () => ({ 'x-api-key': k() });
  return [1, 2].flatMap((version) =>
    [false, true].flatMap((stream) => {
      const path = `/v${version}/models/transcribe${stream ? '/stream' : ''}`;
      const operation = `nativeTranscribe${stream ? 'Stream' : ''}V${version}`;
      const upload = (name: string, status: number, extra: Partial<ContractCase> & { file?: () => Blob | null; query?: string } = {}): ContractCase[] =>
        underNativePrefixes({
          name,
          operation,
          method: 'POST',
          path: path + (extra.query ?? ''),
          headers: apiKey(key),
          body: () => {
            const form = new FormData();
            const file = extra.file === undefined ? audio.speech() : extra.file();
            if (file) form.append('file', file, 'audio_file');
            return form;
          },
          status,
          ...(status === 200 ? { expectMediaType: stream ? 'application/x-ndjson' : 'application/json' } : {}),
          ...extra,
        });
      return [
        ...upload('segments', 200),
        ...upload('translate_to_french=true', 200, { query: '?translate_to_french=true' }),
        ...upload('a file that is not audio', 400, { file: () => new Blob(['not audio, only text '.repeat(8)]) }),
        ...upload('no key', 401, { headers: () => ({}) }),
        ...upload('a Bearer key alone', 401, { headers: () => ({ authorization: `Bearer ${key()}` }) }),
        ...upload('no balance', 402, { headers: apiKey(brokeKey) }),
        ...upload('audio over the duration limit', 413, { file: audio.tooLong }),
        ...upload('no file', 422, { file: () => null }),
        ...upload('translate_to_french is no boolean', 422, { query: '?translate_to_french=maybe' }),
        ...upload('over a rate limit', 429, { headers: apiKey(limitedKey) }),
        ...upload('once retired', 410, { server: 'bare', headers: () => ({}) }),
      ];
    }),
  );
}
