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
      const operation = `${method.toLowerCase()}${route.path.split(/[/-]/).filter(Boolean).map((p) => p[0]!.toUpperCase() + p.slice(1)).join('')}NotServed`;
      return [
        ...underNativePrefixes({ name: `${method} ${route.path} while served`, operation, method, path: route.path, status: 405 }),
        ...underNativePrefixes({ name: `${method} ${route.path} once retired`, operation, method, path: route.path, status: 410, server: 'bare' }),
      ];
    }),
  );
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
