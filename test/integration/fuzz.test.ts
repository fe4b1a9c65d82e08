/**
 * The standing fuzz suite (load-tests/fuzz/, `npm run fuzz`) in small: a fixed seed and a few hundred
 * cases per target — JSON bodies, multipart bodies (both with native routes), raw HTTP, request smuggling
 * and the WebSocket routes (realtime sessions, the speech socket, carrier streams with and without a token)
 * against a server process with the demo models, and every upload decoder through the DecoderPool — a few
 * thousand cases in all. Every case must
 * pass the suite's rule (outcomes.ts): a 2xx, a 4xx with its surface's error shape, a 503 with
 * Retry-After, for raw HTTP a refusal by the transport's parser, for a socket an answer to the probe or a
 * documented close; never another 5xx, a close 1011, a server_error event, an error-level log line, a
 * hang, or a dead server.
 * `KUMA_FUZZ_CASES=<n>` runs n cases per target instead.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DecoderPool } from '../../src/codecs/decode/decoder-pool.js';
import { DECODER_TARGETS } from '../../load-tests/fuzz/decoder-targets.js';
import { runCases, startFuzzServer, type FuzzServer } from '../../load-tests/fuzz/harness.js';
import { emptyTally, failuresIn } from '../../load-tests/fuzz/outcomes.js';
import { decoderRunner, makeSeeds, serverContext, serverRunner } from '../../load-tests/fuzz/targets.js';

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
  it.each(['json', 'multipart', 'raw-http', 'smuggling', 'ws-realtime', 'ws-speech', 'ws-carrier', 'ws-preauth'])(
    '%s: every case answered within the rules, the server alive',
    async (name) => {
      const ctx = () => serverContext(server, seeds, 20_000);
      const tally = emptyTally();
      const result = await runCases(serverRunner(name, ctx), tally, {
        seed: SEED,
        from: 0,
        to: HTTP_CASES,
        concurrency: 8,
        batch: 200,
        onBatch: () => {},
        alive: () => server.alive(),
        errorsLogged: () => server.takeErrorLines(),
      });
      expect(tally.findings, JSON.stringify(tally.findings.slice(0, 3), null, 1)).toEqual([]);
      expect(failuresIn(tally)).toBe(0);
      expect(result).toBe('done');
      expect(tally.cases).toBe(HTTP_CASES);
      expect(tally.outcomes['4xx']).toBeGreaterThan(0); // the cases reach the routes' validation (for sockets: the upgrade's)…
      if (name === 'json' || name === 'multipart' || name === 'smuggling') expect(tally.outcomes['2xx']).toBeGreaterThan(0); // …and some get through it (smuggling: the controls' pipelined requests)
      if (name.startsWith('ws-')) expect(tally.outcomes['ws-closed']).toBeGreaterThan(0); // sockets: some end in a documented close…
      if (name === 'ws-realtime' || name === 'ws-speech') expect(tally.outcomes['ws-answered']).toBeGreaterThan(0); // …some answer the probe in-band
      if (name === 'ws-preauth') expect(tally.outcomes['ws-dropped']).toBeGreaterThan(0); // …and pre-auth sockets over a bound are dropped unread
    },
    120_000,
  );

  it.each(DECODER_TARGETS.map((d) => `decode-${d}`))(
    '%s: every mutated file decodes or is refused with a 4xx',
    async (name) => {
      const tally = emptyTally();
      await runCases(decoderRunner(name, pool, seeds, 20_000), tally, {
        seed: SEED,
        from: 0,
        to: DECODER_CASES,
        concurrency: 8,
        batch: 200,
        onBatch: () => {},
        alive: async () => true,
      });
      expect(tally.findings, JSON.stringify(tally.findings.slice(0, 3), null, 1)).toEqual([]);
      expect(tally.cases).toBe(DECODER_CASES);
      expect(tally.outcomes['4xx']).toBeGreaterThan(0);
    },
    120_000,
  );
});
