/**
 * Every fuzz target as a CaseRunner, ready to run against a server (HTTP and WebSocket targets) or a
 * DecoderPool (decoder targets): the one list shared by `npm run fuzz` and the vitest fuzz file.
 */
import type { DecoderPool } from '../../src/codecs/decode/decoder-pool.js';
import { DECODER_TARGETS, decodeCase, makeSeeds, mutate, type DecoderInput } from './decoder-targets.js';
import type { CaseRunner, FuzzServer } from './harness.js';
import { jsonTarget, multipartTarget, rawHttpTarget, type HttpContext, type Target } from './http-targets.js';
import { smugglingTarget } from './smuggling-target.js';
import { wsCarrierTarget } from './ws-carrier-target.js';
import { wsPreAuthTarget } from './ws-preauth-target.js';
import { wsRealtimeTarget, wsSpeechTarget } from './ws-targets.js';

/** The targets that run against the fuzz server process: HTTP, then WebSocket. */
const SERVER: Record<string, Target<any>> = {
  json: jsonTarget,
  multipart: multipartTarget,
  'raw-http': rawHttpTarget,
  smuggling: smugglingTarget,
  'ws-realtime': wsRealtimeTarget,
  'ws-speech': wsSpeechTarget,
  'ws-carrier': wsCarrierTarget,
  'ws-preauth': wsPreAuthTarget,
};
export const SERVER_TARGETS = Object.keys(SERVER);
export const ALL_TARGETS: string[] = [...SERVER_TARGETS, ...DECODER_TARGETS.map((d) => `decode-${d}`)];
export const isServerTarget = (name: string) => name in SERVER;

/** What a server target's case needs to know of the running server. */
export function serverContext(server: FuzzServer, seeds: Map<string, Uint8Array[]>, caseTimeoutMs: number): HttpContext {
  const p = server.process;
  return { baseUrl: p.baseUrl, port: p.port, apiKey: p.apiKey, callToken: server.callToken, audio: uploadSamples(seeds), caseTimeoutMs };
}

export function serverRunner(name: string, ctx: () => HttpContext): CaseRunner<unknown> {
  const target = SERVER[name]!;
  return { name, generate: (rng) => target.generate(rng), execute: (input) => target.execute(input, ctx()), describe: (input) => target.describe(input) };
}

export function decoderRunner(name: string, pool: DecoderPool, seeds: Map<string, Uint8Array[]>, caseTimeoutMs: number): CaseRunner<DecoderInput> {
  const container = name.replace(/^decode-/, '');
  const own = seeds.get(container);
  if (!own?.length) throw new Error(`no seed files for ${container}`);
  const all = [...seeds.values()].flat();
  return {
    name,
    generate: (rng) => ({ bytes: mutate(rng, rng.pick(own), all) }),
    execute: (input) => decodeCase(pool, input, caseTimeoutMs),
    describe: (input) => `${input.bytes.length} bytes, base64 head ${Buffer.from(input.bytes.subarray(0, 96)).toString('base64')}`,
  };
}

/** Short valid uploads for the multipart target's file parts: a WAV of speech and a few compressed seeds. */
export function uploadSamples(seeds: Map<string, Uint8Array[]>): Uint8Array[] {
  return [seeds.get('wav')![0]!, seeds.get('mp3')![0]!, seeds.get('ogg-opus')![0]!, seeds.get('flac')![0]!];
}

export { makeSeeds };
