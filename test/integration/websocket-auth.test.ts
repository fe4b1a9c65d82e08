/**
 * Auth on the WebSocket upgrade beyond API keys: realtime client secrets (minted over REST in the GA and
 * beta shapes, single use, expiring, accepted only by routes that opt in) and the per-key session cap.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { closed, connect, nextText, open, wsUrl } from '../helpers/websocket-client.js';
import { websocketProbeRoutes } from '../fixtures/websocket-probe-routes.js';
import { hashClientSecret } from '../../src/auth/client-secrets.js';

let t: TestServer;
const MAX_SESSIONS = 2;
beforeAll(async () => {
  t = await startTestServer({ extraRoutes: () => websocketProbeRoutes(), config: { realtimeMaxSessionsPerKey: MAX_SESSIONS } });
});
afterAll(() => t.close());

const url = (path: string) => wsUrl(t.baseUrl, path);
const withSecret = (secret: string) => ({ protocols: ['realtime', `openai-insecure-api-key.${secret}`] });

async function mint(body: unknown, path = '/openai/v1/realtime/client_secrets', apiKey = t.apiKey): Promise<{ status: number; body: any }> {
  const res = await fetch(t.baseUrl + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

describe('client secrets', () => {
  it('GA: mints an ek_ secret (openai SDK shape) that opens the realtime route once, with the session given at minting', async () => {
    const openai = new OpenAI({ apiKey: t.apiKey, baseURL: `${t.baseUrl}/openai/v1` });
    const session = { type: 'transcription' as const, audio: { input: { format: { type: 'audio/pcmu' as const } } } };
    const before = Math.floor(Date.now() / 1000);
    const minted = await openai.realtime.clientSecrets.create({ expires_after: { anchor: 'created_at', seconds: 120 }, session });
    expect(minted.value).toMatch(/^ek_[A-Za-z0-9_-]{40,}$/);
    expect(minted.expires_at).toBeGreaterThanOrEqual(before + 120);
    expect(minted.expires_at).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 120);
    expect(minted.session).toMatchObject({ ...session, object: 'realtime.transcription_session', id: expect.stringMatching(/^sess_/) });

    const ws = await open(url('/openai/v1/probe/ws/secret'), withSecret(minted.value));
    expect(ws.protocol).toBe('realtime');
    ws.send('whoami');
    const who = JSON.parse(await nextText(ws));
    expect(who).toMatchObject({ accountId: t.accountId, keyId: t.keyId, clientSecret: { shape: 'ga', session, expiresAt: minted.expires_at } });
    ws.close();

    const again = await connect(url('/openai/v1/probe/ws/secret'), withSecret(minted.value));
    expect(again).toMatchObject({ kind: 'refused', status: 401, body: { error: { code: 'invalid_api_key' } } });
  });

  it('beta: POST /realtime/transcription_sessions returns the session with client_secret, usable as a Bearer token too', async () => {
    const config = { input_audio_format: 'g711_alaw', input_audio_transcription: { model: 'sunjata-1', language: 'bm' }, turn_detection: null };
    const minted = await mint(config, '/compat/v1/realtime/transcription_sessions');
    expect(minted.status).toBe(200);
    expect(minted.body).toMatchObject({ ...config, object: 'realtime.transcription_session', client_secret: { value: expect.stringMatching(/^ek_/) } });
    const lifetime = minted.body.client_secret.expires_at - Date.now() / 1000;
    expect(lifetime).toBeGreaterThan(50);
    expect(lifetime).toBeLessThanOrEqual(60);
    const ws = await open(url('/compat/v1/probe/ws/secret'), { headers: { authorization: `Bearer ${minted.body.client_secret.value}` } });
    ws.send('whoami');
    expect(JSON.parse(await nextText(ws)).clientSecret).toMatchObject({ shape: 'beta', session: config });
    ws.close();
  });

  it('refuses lifetimes over 600 s and anchors other than created_at with a 400 envelope', async () => {
    expect(await mint({ expires_after: { anchor: 'created_at', seconds: 601 } })).toMatchObject({
      status: 400,
      body: { error: { param: 'expires_after.seconds' } },
    });
    expect(await mint({ expires_after: { anchor: 'now', seconds: 60 } })).toMatchObject({ status: 400, body: { error: { param: 'expires_after.anchor' } } });
    expect(await mint({ session: 'not an object' })).toMatchObject({ status: 400, body: { error: { param: 'session' } } });
  });

  it('is refused 401 on REST routes and on WebSocket routes that do not take secrets, without being used up', async () => {
    const { body } = await mint({});
    const rest = await fetch(`${t.baseUrl}/openai/v1/models`, { headers: { authorization: `Bearer ${body.value}` } });
    expect(rest.status).toBe(401);
    expect(((await rest.json()) as any).error.message).toMatch(/only when opening the realtime WebSocket/);
    const mintWithSecret = await mint({}, '/openai/v1/realtime/client_secrets', body.value);
    expect(mintWithSecret.status).toBe(401);
    const otherSocket = await connect(url('/openai/v1/probe/ws/echo'), withSecret(body.value));
    expect(otherSocket).toMatchObject({ kind: 'refused', status: 401 });
    // Still good where it belongs.
    const ws = await open(url('/openai/v1/probe/ws/secret'), withSecret(body.value));
    ws.close();
  });

  it('refuses an expired secret, an unknown one, and the secret of a key revoked since', async () => {
    const expired = 'ek_expired-secret-for-the-test-0000000000000000';
    await t.server.store.createClientSecret(
      { secretHash: hashClientSecret(expired), accountId: t.accountId, keyId: t.keyId, shape: 'ga', session: {}, expiresAt: Date.now() - 1 },
      Date.now() - 60_000,
    );
    const refused = await connect(url('/openai/v1/probe/ws/secret'), withSecret(expired));
    expect(refused).toMatchObject({ kind: 'refused', status: 401, body: { error: { message: expect.stringMatching(/expired/) } } });
    expect(await connect(url('/openai/v1/probe/ws/secret'), withSecret('ek_never-minted'))).toMatchObject({ kind: 'refused', status: 401 });

    const other = await t.newAccount(5_000_000);
    const { body } = await mint({}, '/openai/v1/realtime/client_secrets', other.apiKey);
    await t.server.store.revokeKey(other.keyId);
    expect(await connect(url('/openai/v1/probe/ws/secret'), withSecret(body.value))).toMatchObject({ kind: 'refused', status: 401 });
  });

  it('is used up only by a connection that opens: refused at the session cap (429) or as a plain GET (426), it opens later, then once only', async () => {
    const key = await t.newAccount(5_000_000);
    const headers = { authorization: `Bearer ${key.apiKey}` };
    const { body } = await mint({}, '/openai/v1/realtime/client_secrets', key.apiKey);
    const sessions = [];
    for (let i = 0; i < MAX_SESSIONS; i++) sessions.push(await open(url('/openai/v1/probe/ws/echo'), { headers }));
    // The key's places are all taken: the secret's upgrade is refused, twice, and the secret is not used up.
    for (let i = 0; i < 2; i++) {
      expect(await connect(url('/openai/v1/probe/ws/secret'), withSecret(body.value))).toMatchObject({ kind: 'refused', status: 429 });
    }
    sessions[0]!.close();
    await closed(sessions[0]!);
    // A plain GET of the route is 426 and does not use it up either.
    expect((await fetch(`${t.baseUrl}/openai/v1/probe/ws/secret`, { headers: { authorization: `Bearer ${body.value}` } })).status).toBe(426);
    const ws = await open(url('/openai/v1/probe/ws/secret'), withSecret(body.value));
    ws.send('whoami');
    expect(JSON.parse(await nextText(ws))).toMatchObject({ keyId: key.keyId, clientSecret: { shape: 'ga' } });
    ws.close();
    await closed(ws);
    // The connection that opened used it.
    expect(await connect(url('/openai/v1/probe/ws/secret'), withSecret(body.value))).toMatchObject({
      kind: 'refused',
      status: 401,
      body: { error: { message: expect.stringMatching(/already used/) } },
    });
    for (const s of sessions.slice(1)) s.close();
  });

  it('two upgrades racing with one secret: exactly one opens, the other is refused 401', async () => {
    const key = await t.newAccount(5_000_000);
    for (let round = 0; round < 5; round++) {
      const { body } = await mint({}, '/openai/v1/realtime/client_secrets', key.apiKey);
      const results = await Promise.all([0, 1].map(() => connect(url('/openai/v1/probe/ws/secret'), withSecret(body.value))));
      expect(results.map((r) => (r.kind === 'open' ? 'open' : r.status)).sort()).toEqual([401, 'open']);
      for (const r of results)
        if (r.kind === 'open') {
          r.ws.close();
          await closed(r.ws);
        }
    }
  });

  it('stores only the hash of a secret', async () => {
    const { body } = await mint({});
    expect(await t.server.store.consumeClientSecret(body.value)).toBeUndefined();
    expect(await t.server.store.consumeClientSecret(hashClientSecret(body.value))).toMatchObject({ accountId: t.accountId });
  });
});

describe('per-key session cap', () => {
  it(`refuses a key's session beyond ${MAX_SESSIONS} with 429 before the upgrade, and frees the place when one closes`, async () => {
    const key = await t.newAccount(5_000_000);
    const headers = { authorization: `Bearer ${key.apiKey}` };
    // A plain GET (answered 426) holds no place: all MAX_SESSIONS places are still free after these.
    for (let i = 0; i < MAX_SESSIONS; i++) expect((await fetch(`${t.baseUrl}/openai/v1/probe/ws/echo`, { headers })).status).toBe(426);
    const sessions = [];
    for (let i = 0; i < MAX_SESSIONS; i++) sessions.push(await open(url('/openai/v1/probe/ws/echo'), { headers }));
    const refused = await connect(url('/openai/v1/probe/ws/echo'), { headers });
    expect(refused).toMatchObject({
      kind: 'refused',
      status: 429,
      body: { error: { code: 'rate_limit_exceeded', message: expect.stringMatching(/concurrent realtime sessions/) } },
    });
    // Another key is not affected.
    const otherKey = await open(url('/openai/v1/probe/ws/echo'), { headers: { authorization: `Bearer ${t.apiKey}` } });
    otherKey.close();
    sessions[0]!.close();
    await closed(sessions[0]!);
    const replacement = await open(url('/openai/v1/probe/ws/echo'), { headers });
    replacement.send('hi');
    expect(await nextText(replacement)).toBe('hi');
    for (const ws of [replacement, ...sessions.slice(1)]) ws.close();
  });
});
