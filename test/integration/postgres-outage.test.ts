/**
 * A PostgreSQL outage as clients see it: while the database is down, a request that needs it is answered
 * 503 service_unavailable with Retry-After (a retry is the right reaction, unlike the 500 of a bug), the
 * node says not ready on /readyz while /healthz (the process) stays 200, and everything works again once
 * the database is back, with no restart of Kuma. A real PostgreSQL started from the machine's binaries
 * (test/helpers/postgres.ts), stopped and started under a running server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findPostgresBin, startTestPostgres, type TestPostgres } from '../helpers/postgres.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';

const bin = findPostgresBin();
const required = process.env.KUMA_REQUIRE_POSTGRES === '1';

describe.skipIf(!bin && !required)('PostgreSQL outage', () => {
  let cluster: TestPostgres;
  let t: TestServer;

  beforeAll(async () => {
    if (!bin) throw new Error('KUMA_REQUIRE_POSTGRES=1 but no PostgreSQL binaries (initdb, pg_ctl) were found');
    cluster = await startTestPostgres(bin);
    // No key cache: every request reaches the store, so the outage is seen at once.
    t = await startTestServer({ config: { databaseUrl: cluster.url, authCacheTtlMs: 0 } });
  });
  afterAll(async () => {
    await t?.close();
    await cluster?.stop();
  });

  const models = () => fetch(`${t.baseUrl}/openai/v1/models`, { headers: { authorization: `Bearer ${t.apiKey}` } });

  it('answers 503 with Retry-After while the database is down, and serves again once it is back', async () => {
    expect((await models()).status).toBe(200);
    await cluster.pause();
    try {
      const refused = await models();
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('2');
      expect(await refused.json()).toEqual({
        error: { message: 'The account database is unavailable. Try again shortly.', type: 'api_error', param: null, code: 'service_unavailable' },
      });

      const readiness = await fetch(`${t.baseUrl}/readyz`);
      expect(readiness.status).toBe(503);
      expect(((await readiness.json()) as { checks: unknown[] }).checks).toEqual(
        expect.arrayContaining([
          { name: 'store', ready: false, detail: expect.stringMatching(/^the account database is unreachable \((ENOENT|ECONNREFUSED)\)$/) },
        ]),
      );
      expect((await fetch(`${t.baseUrl}/healthz`)).status).toBe(200);
    } finally {
      await cluster.resume();
    }
    expect((await models()).status).toBe(200);
    expect((await fetch(`${t.baseUrl}/readyz`)).status).toBe(200);
    // The operator sees why (logged at error, with pg's reason), the client only the envelope above.
    expect(t.logs.join('')).toMatch(/The account database is unavailable: /);
  });
});
