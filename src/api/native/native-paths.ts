/**
 * The native surface's routes (SPEC §4.7) and where each one moved on the primary surface (SPEC §9). One
 * table drives the routes' registration, the `Link: <successor>` header while they are deprecated, the 410
 * answer once they are retired (for every method, so a retired path never becomes a 404 or a 405), the
 * OpenAPI document and the README's migration table. Paths are relative to the native prefixes ('' and
 * '/api', SURFACE_PREFIXES).
 */
import type { HttpMethod } from '../types.js';

export interface NativeRouteSpec {
  method: HttpMethod;
  path: string;
  /** The equivalent primary route, as sent in `Link: <…>; rel="successor-version"`. */
  successor: string;
  /** How to make the same call on the primary surface: the 410's message and the README table. */
  migration: string;
}

/** The prefix successors are given under: the primary surface as SPEC §9 names it. */
export const PRIMARY_PREFIX = '/compat/v1';

const TRANSCRIBE = `POST ${PRIMARY_PREFIX}/audio/transcriptions with model sunjata-1 (translate_to_french=true: POST ${PRIMARY_PREFIX}/audio/translations)`;
const TRANSCRIBE_STREAM = `POST ${PRIMARY_PREFIX}/audio/transcriptions with model sunjata-1 and stream=true (Server-Sent Events; translate_to_french=true: POST ${PRIMARY_PREFIX}/audio/translations)`;

export const NATIVE_ROUTES: readonly NativeRouteSpec[] = [
  {
    method: 'GET',
    path: '/v1/models/translate/supported-languages',
    successor: `${PRIMARY_PREFIX}/models/banjugu-1`,
    migration: `GET ${PRIMARY_PREFIX}/models/banjugu-1 (it translates between bam_Latn, fra_Latn and eng_Latn)`,
  },
  {
    method: 'POST',
    path: '/v1/models/translate',
    successor: `${PRIMARY_PREFIX}/chat/completions`,
    migration: `POST ${PRIMARY_PREFIX}/chat/completions with model banjugu-1 and djelia.source_language / djelia.target_language`,
  },
  { method: 'POST', path: '/v1/models/transcribe', successor: `${PRIMARY_PREFIX}/audio/transcriptions`, migration: TRANSCRIBE },
  { method: 'POST', path: '/v2/models/transcribe', successor: `${PRIMARY_PREFIX}/audio/transcriptions`, migration: TRANSCRIBE },
  { method: 'POST', path: '/v1/models/transcribe/stream', successor: `${PRIMARY_PREFIX}/audio/transcriptions`, migration: TRANSCRIBE_STREAM },
  { method: 'POST', path: '/v2/models/transcribe/stream', successor: `${PRIMARY_PREFIX}/audio/transcriptions`, migration: TRANSCRIBE_STREAM },
  {
    method: 'POST',
    path: '/v1/models/tts',
    successor: `${PRIMARY_PREFIX}/audio/speech`,
    migration: `POST ${PRIMARY_PREFIX}/audio/speech with model jifili-1, voice moussa and response_format wav (numeric speakers become moussa)`,
  },
  {
    method: 'POST',
    path: '/v2/models/tts',
    successor: `${PRIMARY_PREFIX}/audio/speech`,
    migration: `POST ${PRIMARY_PREFIX}/audio/speech with model jifili-1, voice moussa and response_format mp3 or wav (descriptions become moussa)`,
  },
  {
    method: 'POST',
    path: '/v2/models/tts/stream',
    successor: `${PRIMARY_PREFIX}/audio/speech`,
    migration: `POST ${PRIMARY_PREFIX}/audio/speech with model jifili-1 and djelia.chunk_size (the audio streams as it is synthesized; stream_format=sse for events)`,
  },
];

/** The table entry for a route definition's method and path, if it is a native route. */
export function nativeRouteSpec(method: HttpMethod, path: string): NativeRouteSpec | undefined {
  return NATIVE_ROUTES.find((route) => route.method === method && route.path === path);
}
