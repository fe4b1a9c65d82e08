/**
 * The native surface (README "Native surface (deprecated) and its retirement") in the fuzz's JSON and
 * multipart targets: its routes under both prefixes ('' and '/api'), valid-looking bodies to mutate, the
 * `translate_to_french` query values pydantic takes and some it refuses, and `x-api-key` auth (the only
 * auth the native surface takes: a Bearer-only request is its 401). Its errors are `{detail}`, not the
 * envelope: `errorShapeOf` tells the classifier which shape a path must answer with.
 */
import type { ErrorShape } from './outcomes.js';
import type { Rng } from './rng.js';
import { randomNumber, randomString, speechText, urlPart } from './values.js';

const NATIVE_PREFIXES = ['', '/api'];
const NATIVE_PATH = /^\/(api\/)?v[12]\//;

export const errorShapeOf = (path: string): ErrorShape => (NATIVE_PATH.test(path) ? 'native' : 'envelope');

export type NativeJsonRoute = 'translate' | 'tts-v1' | 'tts-v2' | 'tts-v2-stream';

const JSON_PATHS: Record<NativeJsonRoute, string> = {
  translate: '/v1/models/translate',
  'tts-v1': '/v1/models/tts',
  'tts-v2': '/v2/models/tts',
  'tts-v2-stream': '/v2/models/tts/stream',
};

export function nativeJsonPath(rng: Rng, route: NativeJsonRoute): string {
  return `${rng.pick(NATIVE_PREFIXES)}${JSON_PATHS[route]}`;
}

const LANGUAGES = ['bam_Latn', 'fra_Latn', 'eng_Latn'];
const FORMATS = ['mp3', 'wav', 'wav_8k', 'ulaw_8k'];

/** A body the route would take (mostly), for mutateJson to damage: each field now and then at a bound or past it. */
export function nativeJsonBody(rng: Rng, route: NativeJsonRoute): Record<string, unknown> {
  const text = speechText(rng, 40) || 'i ni ce';
  if (route === 'translate') {
    const source = rng.pick(LANGUAGES);
    return { text, source, target: rng.chance(0.9) ? rng.pick(LANGUAGES.filter((l) => l !== source)) : source };
  }
  if (route === 'tts-v1') return rng.chance(0.7) ? { text, speaker: rng.chance(0.8) ? rng.int(0, 4) : randomNumber(rng) } : { text };
  const body: Record<string, unknown> = {
    text: rng.chance(0.03) ? 'a'.repeat(rng.pick([1000, 1001])) : text,
    description: rng.chance(0.9) ? rng.pick(['Moussa speaks calmly', 'Seydou', 'Sekou, fast', 'a warm voice', '']) : 'd'.repeat(rng.pick([500, 501])),
  };
  if (rng.chance(0.7)) body.format = rng.chance(0.9) ? rng.pick(FORMATS) : rng.pick([null, 'ogg', 'MP3', '']);
  if (route === 'tts-v2-stream' && rng.chance(0.7))
    body.chunk_size = rng.chance(0.8) ? rng.pick([0.1, 0.5, 1, 2]) : rng.pick([0, 0.09, 2.01, -1, null, '1', 1e9]);
  return body;
}

/** POST …/transcribe[/stream] with a `translate_to_french` query (or none). */
export function nativeTranscribePath(rng: Rng): string {
  const path = `${rng.pick(NATIVE_PREFIXES)}/${rng.pick(['v1', 'v2'])}/models/transcribe${rng.chance(0.4) ? '/stream' : ''}`;
  if (rng.chance(0.3)) return path;
  const values = ['true', 'false', '1', '0', 'yes', 'no', 'on', 'off', 't', 'f', 'y', 'n', 'TRUE', 'Off', '', 'null', '2', 'maybe'];
  const value = rng.chance(0.9) ? rng.pick(values) : urlPart(randomString(rng).slice(0, 40));
  // Repeated flags: the last one counts (as Starlette reads a query).
  return `${path}?translate_to_french=${value}${rng.chance(0.05) ? `&translate_to_french=${rng.pick(values)}` : ''}`;
}

/** Native auth: `x-api-key` most of the time; sometimes Bearer alone (401 there), or none. */
export function nativeAuth(rng: Rng, key: string): Record<string, string> {
  if (rng.chance(0.9)) return { 'x-api-key': key };
  return rng.pick<Record<string, string>>([{}, { authorization: `Bearer ${key}` }, { 'x-api-key': 'nope' }, { 'x-api-key': '' }]);
}
