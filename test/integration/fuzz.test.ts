/**
 * The standing fuzz suite (load-tests/fuzz/, `npm run fuzz`) in small: a fixed seed and a few hundred
 * cases per target — JSON bodies, multipart bodies and raw HTTP against a server process with the demo
 * models, and every upload decoder through the DecoderPool — a few thousand cases in all. Every case must
 * pass the suite's rule (outcomes.ts): a 2xx, a 4xx with the error envelope, a 503 with Retry-After, or
 * for raw HTTP a refusal by the transport's parser; never another 5xx, a hang, or a dead server.
 * `KUMA_FUZZ_CASES=<n>` runs n cases per target instead.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DecoderPool } from '../../src/codecs/decode/decoder-pool.js';
import { DECODER_TARGETS } from '../../load-tests/fuzz/decoder-targets.js';
import { runCases, startFuzzServer, type FuzzServer } from '../../load-tests/fuzz/harness.js';
import { emptyTally, failuresIn } from '../../load-tests/fuzz/outcomes.js';
import { decoderRunner, httpRunner, makeSeeds, uploadSamples } from '../../load-tests/fuzz/targets.js';

const SEED = 16;
const HTTP_CASES = Number(process.env.KUMA_FUZZ_CASES ?? 400);
const DECODER_CASES = Number(process.env.KUMA_FUZZ_CASES ?? 150);

let server: FuzzServer;
let seeds: Map<string, Uint8Array[]>;
const pool = new DecoderPool({ size: 2, timeoutMs: 10_000 });

beforeAll(async () => {
  [server, seeds] = await Promise.all([startFuzzServer(), makeSeeds()]);
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await pool.close();
});

describe('fuzz (npm test slice of `npm run fuzz`)', () => {
  it.each(['json', 'multipart', 'raw-http'])('%s: every case answered within the rules, the server alive', async (name) => {
    const ctx = () => ({ baseUrl: server.process.baseUrl, port: server.process.port, apiKey: server.process.apiKey, audio: uploadSamples(seeds), caseTimeoutMs: 20_000 });
    const tally = emptyTally();
    const result = await runCases(httpRunner(name, ctx), tally, { seed: SEED, from: 0, to: HTTP_CASES, concurrency: 8, batch: 200, onBatch: () => {}, alive: () => server.alive() });
    expect(tally.findings, JSON.stringify(tally.findings.slice(0, 3), null, 1)).toEqual([]);
    expect(failuresIn(tally)).toBe(0);
    expect(result).toBe('done');
    expect(tally.cases).toBe(HTTP_CASES);
    expect(tally.outcomes['4xx']).toBeGreaterThan(0); // the cases reach the routes' validation…
    if (name !== 'raw-http') expect(tally.outcomes['2xx']).toBeGreaterThan(0); // …and some get through it
  }, 120_000);

  it.each(DECODER_TARGETS.map((d) => `decode-${d}`))('%s: every mutated file decodes or is refused with a 4xx', async (name) => {
    const tally = emptyTally();
    await runCases(decoderRunner(name, pool, seeds, 20_000), tally, { seed: SEED, from: 0, to: DECODER_CASES, concurrency: 8, batch: 200, onBatch: () => {}, alive: async () => true });
    expect(tally.findings, JSON.stringify(tally.findings.slice(0, 3), null, 1)).toEqual([]);
    expect(tally.cases).toBe(DECODER_CASES);
    expect(tally.outcomes['4xx']).toBeGreaterThan(0);
  }, 120_000);
});
