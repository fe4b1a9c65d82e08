/**
 * The exchanges of the OpenAPI contract test: for every operation, its successes in every response format
 * and streaming variant, and each error it can answer (401, 402, 404, 400, 413, 415, 422, 429, and 503 from a
 * server without models). Paths are relative to a prefix, except for the operational endpoints.
 */
import { JIFILI_FORMATS, LEGACY_FORMATS } from '../../src/api/compat/speech-rules.js';
import { nativeMethodGuardCases, nativeSpeechTranslateCases, nativeTranscribeCases } from './openapi-contract-native-cases.js';

export interface ContractCase {
  name: string;
  /** Groups the cases of one operation into one test. */
  operation: string;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** A function when the path holds an id the server makes at the start of the test (the admin API's). */
  path: string | (() => string);
  /** Not under the primary surface's prefixes (the operational endpoints). */
  absolute?: boolean;
  /** `bare`: the server without models. */
  server?: 'main' | 'bare';
  headers?: () => Record<string, string>;
  body?: () => RequestInit['body'];
  /** A JSON request body: also checked against the document's request schema. */
  json?: unknown;
  /** Whether the document's request schema accepts `json` (default: it does). */
  requestValid?: boolean;
  status: number;
  responseFormat?: string;
  expectMediaType?: string;
}

interface Inputs {
  audio: { speech: () => Blob; tooLong: () => Blob };
  key: () => string;
  brokeKey: () => string;
  /** A key whose account is over its requests-per-minute limit (429). */
  limitedKey: () => string;
  /** A funded key of the server without models. */
  bareKey: () => string;
}

const NO_KEY = () => ({});
const LANGS = { source_language: 'bam_Latn', target_language: 'fra_Latn' };

export function casesFor({ audio, key, brokeKey, limitedKey, bareKey }: Inputs): ContractCase[] {
  const bearer = (k: () => string) => () => ({ authorization: `Bearer ${k()}` });
  const authedOn = (extra: Partial<ContractCase>) => bearer(extra.server === 'bare' ? bareKey : key);
  const authed = bearer(key);

  const json = (operation: string, path: string, name: string, body: unknown, status: number, extra: Partial<ContractCase> = {}): ContractCase => ({
    name,
    operation,
    method: 'POST',
    path,
    headers: () => ({ ...authedOn(extra)(), 'content-type': 'application/json' }),
    body: () => JSON.stringify(body),
    json: body,
    status,
    ...extra,
  });
  const form = (
    operation: string,
    path: string,
    name: string,
    fields: Record<string, string>,
    status: number,
    extra: Partial<ContractCase> & { file?: () => Blob | null } = {},
  ): ContractCase => ({
    name,
    operation,
    method: 'POST',
    path,
    headers: authedOn(extra),
    body: () => {
      const data = new FormData();
      for (const [k, v] of Object.entries(fields)) data.append(k, v);
      const file = extra.file === undefined ? audio.speech() : extra.file();
      if (file) data.append('file', file, 'speech.wav');
      return data;
    },
    status,
    responseFormat: fields.stream === 'true' ? undefined : (fields.response_format ?? 'json'),
    ...extra,
  });
  const get = (operation: string, path: string, name: string, status: number, extra: Partial<ContractCase> = {}): ContractCase => ({
    name,
    operation,
    method: 'GET',
    path,
    headers: authed,
    status,
    ...extra,
  });

  const transcribe = (name: string, fields: Record<string, string>, status: number, extra?: Partial<ContractCase> & { file?: () => Blob | null }) =>
    form('transcriptions', '/audio/transcriptions', name, fields, status, extra);
  const translate = (name: string, fields: Record<string, string>, status: number, extra?: Partial<ContractCase> & { file?: () => Blob | null }) =>
    form('translations', '/audio/translations', name, fields, status, extra);
  const chat = (name: string, body: unknown, status: number, extra?: Partial<ContractCase>) => json('chat', '/chat/completions', name, body, status, extra);
  const speak = (name: string, body: unknown, status: number, extra?: Partial<ContractCase>) => json('speech', '/audio/speech', name, body, status, extra);
  const chatBody = { messages: [{ role: 'user', content: 'i ni ce' }], djelia: LANGS };
  const raw = (contentType: string, body: string) => ({ headers: () => ({ ...authed(), 'content-type': contentType }), body: () => body, json: undefined });

  return [
    get('models', '/models', 'the model list', 200),
    get('models', '/models', 'no key', 401, { headers: NO_KEY }),
    get('models', '/models', 'over a rate limit', 429, { headers: bearer(limitedKey) }),
    get('model', '/models/whisper-1', 'an alias', 200),
    get('model', '/models/gpt-9', 'an unknown model', 404),
    get('model', '/models/sunjata-1', 'no key', 401, { headers: NO_KEY }),
    get('model', '/models/sunjata-1', 'over a rate limit', 429, { headers: bearer(limitedKey) }),
    get('realtime', '/realtime', 'a plain GET of the WebSocket route', 426),
    get('realtime', '/realtime', 'no key', 401, { headers: NO_KEY }),
    get('realtime', '/realtime', 'no balance', 402, { headers: bearer(brokeKey) }),
    get('realtime', '/realtime', 'over a rate limit', 429, { headers: bearer(limitedKey) }),

    ...['json', 'verbose_json', 'text', 'srt', 'vtt'].map((f) => transcribe(`response_format ${f}`, { model: 'sunjata-1', response_format: f }, 200)),
    transcribe('no fields but the file: every default applies', {}, 200, { expectMediaType: 'application/json' }),
    transcribe('stream=true (json)', { stream: 'true' }, 200, { expectMediaType: 'text/event-stream' }),
    transcribe('stream=true with text', { stream: 'true', response_format: 'text' }, 200, { expectMediaType: 'text/event-stream' }),
    transcribe('stream=true with srt', { stream: 'true', response_format: 'srt' }, 400),
    transcribe('no file', { model: 'sunjata-1' }, 400, { file: () => null }),
    transcribe('no key', {}, 401, { headers: NO_KEY }),
    transcribe('no balance', {}, 402, { headers: bearer(brokeKey) }),
    transcribe('over a rate limit', {}, 429, { headers: bearer(limitedKey) }),
    transcribe('an unknown model', { model: 'gpt-9' }, 404),
    transcribe('audio over the duration limit', {}, 413, { file: audio.tooLong }),
    transcribe('a JSON body', {}, 415, raw('application/json', '{}')),
    transcribe('no model loaded', {}, 503, { server: 'bare' }),

    translate('json', { language: 'fra_Latn' }, 200),
    translate('text', { response_format: 'text' }, 200),
    translate('srt is not served for translations', { response_format: 'srt' }, 400),
    translate('no key', {}, 401, { headers: NO_KEY }),
    translate('no balance', {}, 402, { headers: bearer(brokeKey) }),
    translate('over a rate limit', {}, 429, { headers: bearer(limitedKey) }),
    translate('an unknown model', { model: 'gpt-9' }, 404),
    translate('audio over the duration limit', {}, 413, { file: audio.tooLong }),
    translate('a urlencoded body', {}, 415, raw('application/x-www-form-urlencoded', 'model=sunjata-1')),
    translate('no model loaded', {}, 503, { server: 'bare' }),

    chat('the translation, model by default', chatBody, 200, { expectMediaType: 'application/json' }),
    chat('stream=true', { ...chatBody, model: 'banjugu-1', stream: true }, 200, { expectMediaType: 'text/event-stream' }),
    chat('no djelia object', { messages: chatBody.messages }, 400, { requestValid: false }),
    chat('the same language twice', { ...chatBody, djelia: { source_language: 'bam_Latn', target_language: 'bam_Latn' } }, 400),
    chat('a body that is not JSON', null, 400, raw('application/json', '{"messages": [')),
    chat('no key', chatBody, 401, { headers: NO_KEY }),
    chat('no balance', chatBody, 402, { headers: bearer(brokeKey) }),
    chat('over a rate limit', chatBody, 429, { headers: bearer(limitedKey) }),
    chat('an unknown model', { ...chatBody, model: 'gpt-9' }, 404),
    chat('a body over the JSON limit', null, 413, raw('application/json', JSON.stringify({ ...chatBody, pad: 'x'.repeat(70 * 1024) }))),
    chat('an XML body', null, 415, raw('application/xml', '<messages/>')),
    chat('no model loaded', chatBody, 503, { server: 'bare' }),

    ...JIFILI_FORMATS.map((f) => speak(`jifili-1 ${f}`, { model: 'jifili-1', input: 'i ni ce', response_format: f }, 200, { responseFormat: f })),
    ...LEGACY_FORMATS.filter((f) => !JIFILI_FORMATS.includes(f)).map((f) =>
      speak(`djelia-tts-v2 ${f}`, { model: 'djelia-tts-v2', input: 'i ni ce', voice: 'sekou', response_format: f }, 200, { responseFormat: f }),
    ),
    speak('only input: model, format and stream_format by default', { input: 'i ni ce' }, 200, { responseFormat: 'mp3' }),
    speak('a djelia object without chunk_size', { input: 'i ni ce', djelia: { temperature: 0.5 } }, 200, { responseFormat: 'mp3' }),
    speak('stream_format=sse', { input: 'i ni ce', response_format: 'wav', stream_format: 'sse' }, 200, { expectMediaType: 'text/event-stream' }),
    speak('chunk_size out of bounds', { input: 'i ni ce', djelia: { chunk_size: 3 } }, 400, { requestValid: false }),
    speak('no input', { model: 'jifili-1' }, 400, { requestValid: false }),
    speak('a voice jifili-1 does not serve', { input: 'i ni ce', voice: 'echo' }, 400),
    speak('no key', { input: 'i ni ce' }, 401, { headers: NO_KEY }),
    speak('no balance', { input: 'i ni ce' }, 402, { headers: bearer(brokeKey) }),
    speak('over a rate limit', { input: 'i ni ce' }, 429, { headers: bearer(limitedKey) }),
    speak('an unknown model', { model: 'gpt-9', input: 'i ni ce' }, 404),
    speak('a body over the JSON limit', null, 413, raw('application/json', JSON.stringify({ input: 'i'.repeat(70 * 1024) }))),
    speak('a form body', null, 415, raw('multipart/form-data; boundary=x', '--x--')),
    speak('a format jifili-1 does not serve', { input: 'i ni ce', response_format: 'flac' }, 422),
    speak('no model loaded', { input: 'i ni ce' }, 503, { server: 'bare' }),

    // The streaming speech socket over plain HTTP: auth and balance as for any route, then 426.
    ...['/audio/speech/stream', '/text-to-speech/moussa/stream-input', '/text-to-speech/moussa/multi-stream-input'].flatMap((path) => {
      const operation = path.includes('multi-stream-input')
        ? 'streamSpeechElevenLabsMultiContext'
        : path.includes('stream-input')
          ? 'streamSpeechElevenLabs'
          : 'streamSpeech';
      return [
        get(operation, path, 'plain HTTP, not an upgrade', 426),
        get(operation, path, 'no key', 401, { headers: NO_KEY }),
        get(operation, path, 'no balance', 402, { headers: bearer(brokeKey) }),
        get(operation, path, 'over a rate limit', 429, { headers: bearer(limitedKey) }),
      ];
    }),
    ...elevenLabsSpeechCases(json, raw, bearer(brokeKey), bearer(limitedKey)),
    ...realtimeSecretCases(json, raw, bearer(limitedKey)),
    ...telephonyTokenCases(json, raw, bearer(limitedKey)),
    // The carrier streams over plain HTTP: a bad ?token= is refused before anything else; then 426.
    ...['twilio', 'telnyx', 'plivo', 'exotel', 'vonage'].flatMap((carrier) => [
      get(`openCallStream_${carrier}`, `/telephony/v1/${carrier}`, 'plain HTTP, not an upgrade', 426, { absolute: true, headers: NO_KEY }),
      get(`openCallStream_${carrier}`, `/telephony/v1/${carrier}?token=kct1.not.valid`, 'a bad call token', 401, { absolute: true, headers: NO_KEY }),
    ]),
    get('followCall', '/telephony/v1/calls/call_unknown/events', 'no such live call', 404, { absolute: true }),
    get('followCall', '/telephony/v1/calls/call_unknown/events', 'no key', 401, { absolute: true, headers: NO_KEY }),
    get('followCall', '/telephony/v1/calls/call_unknown/events', 'over a rate limit', 429, { absolute: true, headers: bearer(limitedKey) }),

    ...nativeMethodGuardCases(),
    ...nativeSpeechTranslateCases({ key, brokeKey, limitedKey, bareKey }),
    ...nativeTranscribeCases({ audio, key, brokeKey, limitedKey }),
    get('openapi', '/openapi.json', 'the document, without a key', 200, { headers: NO_KEY }),
    get('healthz', '/healthz', 'alive', 200, { absolute: true, headers: NO_KEY }),
    get('readyz', '/readyz', 'ready', 200, { absolute: true, headers: NO_KEY }),
    get('metrics', '/metrics', 'the metrics', 200, { absolute: true, headers: NO_KEY }),
  ];
}

type JsonCase = (operation: string, path: string, name: string, body: unknown, status: number, extra?: Partial<ContractCase>) => ContractCase;
type RawCase = (contentType: string, body: string) => Partial<ContractCase>;

/** Minting realtime client secrets, GA and beta shapes. */
function realtimeSecretCases(json: JsonCase, raw: RawCase, limited: () => Record<string, string>): ContractCase[] {
  const cases: ContractCase[] = [];
  for (const [operation, path, body] of [
    ['client secrets', '/realtime/client_secrets', { expires_after: { anchor: 'created_at', seconds: 60 }, session: { type: 'transcription' } }],
    ['transcription sessions', '/realtime/transcription_sessions', { input_audio_format: 'pcm16', client_secret: { expires_at: { seconds: 60 } } }],
  ] as const) {
    cases.push(
      json(operation, path, 'a secret', body, 200),
      json(operation, path, 'a lifetime over 600 s', { expires_after: { seconds: 7200 }, client_secret: { expires_at: { seconds: 7200 } } }, 400, {
        requestValid: false,
      }),
      json(operation, path, 'no key', body, 401, { headers: NO_KEY }),
      json(operation, path, 'over a rate limit', body, 429, { headers: limited }),
      json(operation, path, 'a body over the JSON limit', null, 413, raw('application/json', JSON.stringify({ pad: 'x'.repeat(70 * 1024) }))),
      json(operation, path, 'an XML body', null, 415, raw('application/xml', '<session/>')),
    );
  }
  return cases;
}

/** Minting telephony call tokens (the /telephony/v1 surface: absolute paths). */
function telephonyTokenCases(json: JsonCase, raw: RawCase, limited: () => Record<string, string>): ContractCase[] {
  const [operation, path, at] = ['call tokens', '/telephony/v1/tokens', { absolute: true }] as const;
  const body = { mode: 'transcription', language: 'fr-FR', ttl_seconds: 600 };
  return [
    json(operation, path, 'a token', body, 200, at),
    json(operation, path, 'a lifetime under 60 s', { ttl_seconds: 5 }, 400, { ...at, requestValid: false }),
    json(operation, path, 'an unknown field', { relay: 'wss://example.com' }, 400, { ...at, requestValid: false }),
    json(operation, path, 'no key', body, 401, { ...at, headers: NO_KEY }),
    json(operation, path, 'over a rate limit', body, 429, { ...at, headers: limited }),
    json(operation, path, 'a body over the JSON limit', null, 413, { ...at, ...raw('application/json', JSON.stringify({ pad: 'x'.repeat(70 * 1024) })) }),
    json(operation, path, 'an XML body', null, 415, { ...at, ...raw('application/xml', '<token/>') }),
  ];
}

/** ElevenLabs' REST text to speech (both paths): every media type its output formats come as, and each error. */
function elevenLabsSpeechCases(json: JsonCase, raw: RawCase, broke: () => Record<string, string>, limited: () => Record<string, string>): ContractCase[] {
  return [
    ['textToSpeechElevenLabs', '/text-to-speech/21m00Tcm4TlvDq8ikWAM'],
    ['textToSpeechStreamElevenLabs', '/text-to-speech/21m00Tcm4TlvDq8ikWAM/stream'],
  ].flatMap(([operation, path]) => {
    const speak = (name: string, query: string, body: unknown, status: number, extra: Partial<ContractCase> = {}) =>
      json(operation!, `${path}${query}`, name, body, status, extra);
    const text = { text: 'i ni ce', model_id: 'eleven_multilingual_v2', voice_settings: { stability: 0.5 } };
    return [
      speak('the default format (mp3_44100_128)', '', text, 200, { expectMediaType: 'audio/mpeg' }),
      speak('pcm_22050', '?output_format=pcm_22050', text, 200, { expectMediaType: 'audio/pcm' }),
      speak('ulaw_8000', '?output_format=ulaw_8000', text, 200, { expectMediaType: 'audio/basic' }),
      speak('alaw_8000', '?output_format=alaw_8000', text, 200, { expectMediaType: 'audio/x-alaw-basic' }),
      speak('opus_48000_64', '?output_format=opus_48000_64', text, 200, { expectMediaType: 'audio/ogg' }),
      speak('no text', '', { model_id: 'jifili-1' }, 400, { requestValid: false }),
      speak('an output_format that is no format', '?output_format=pcm_96000', text, 400),
      speak('no key', '', text, 401, { headers: NO_KEY }),
      speak('no balance', '', text, 402, { headers: broke }),
      speak('over a rate limit', '', text, 429, { headers: limited }),
      speak('an unknown model', '', { ...text, model_id: 'gpt-9' }, 404),
      speak('a body over the JSON limit', '', null, 413, raw('application/json', JSON.stringify({ text: 'i'.repeat(70 * 1024) }))),
      speak('a form body', '', null, 415, raw('multipart/form-data; boundary=x', '--x--')),
      speak('a format jifili-1 does not serve', '?output_format=flac', text, 422),
      speak('no model loaded', '', text, 503, { server: 'bare' }),
    ];
  });
}
