/**
 * POST /telephony/v1/tokens against a real server: minting with an API key, the call settings the token
 * carries (verified with the server's own stored secret), the 400s a wrong body gets, the outbound
 * allow-list applied to relay URLs, expiry, and a revoked key's tokens failing the call-time check.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/test-server.js';
import { checkCallTokenKey, telephonyTokenSecret, verifyCallToken } from '../../../src/telephony/call-token.js';
import { CallTokenError } from '../../../src/telephony/errors.js';

let t: TestServer;
let secret: string;

beforeAll(async () => {
  // `*`: public hosts; 127.0.0.2 and localhost named explicitly, so they may be inner addresses.
  t = await startTestServer({ config: { outboundAllow: '*, 127.0.0.2, localhost' } });
  secret = await telephonyTokenSecret('', t.server.store);
});
afterAll(async () => {
  await t?.close();
});

async function mint(body: unknown, apiKey: string | null = t.apiKey, raw?: string): Promise<{ status: number; body: any; headers: Headers }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (apiKey) headers.authorization = `Bearer ${apiKey}`;
  const res = await fetch(`${t.baseUrl}/telephony/v1/tokens`, { method: 'POST', headers, body: raw ?? JSON.stringify(body) });
  return { status: res.status, body: await res.json(), headers: res.headers };
}

describe('POST /telephony/v1/tokens', () => {
  it('mints a relay token bound to the caller and its settings, which verifies with the stored secret', async () => {
    const res = await mint({
      relay_url: 'wss://93.184.215.14/agent',
      language: 'fr-FR',
      tts_language: 'en-US',
      welcome_greeting: 'I ni ce!',
      interruptible: 'speech',
      ttl_seconds: 600,
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      object: 'telephony.call_token',
      token: expect.stringMatching(/^kct1\./),
      expires_at: expect.any(Number),
      mode: 'relay',
      relay_url: 'wss://93.184.215.14/agent',
      transcription_language: 'fra',
      tts_language: 'eng',
      welcome_greeting: 'I ni ce!',
      interruptible: 'speech',
      allow_relay_override: false,
    });
    const claims = verifyCallToken(secret, res.body.token);
    expect(claims.expiresAt - claims.issuedAt).toBe(600);
    expect(claims).toMatchObject({
      accountId: t.accountId,
      keyId: t.keyId,
      mode: 'relay',
      relayUrl: 'wss://93.184.215.14/agent',
      transcriptionLanguage: 'fra',
      ttsLanguage: 'eng',
      welcomeGreeting: 'I ni ce!',
      interruptible: 'speech',
      allowRelayOverride: false,
      expiresAt: res.body.expires_at,
    });
    await expect(checkCallTokenKey(t.server.store, claims)).resolves.toBeUndefined();
  });

  it('defaults to a one-hour Bambara transcription token, interruptible by anything', async () => {
    const res = await mint({});
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      mode: 'transcription',
      relay_url: null,
      transcription_language: 'bam',
      tts_language: 'bam',
      interruptible: 'any',
      welcome_greeting: null,
    });
    const claims = verifyCallToken(secret, res.body.token);
    expect(claims.expiresAt - claims.issuedAt).toBe(3600);
  });

  it('lets a relay token leave the URL to the call when allow_relay_override is set', async () => {
    const res = await mint({ mode: 'relay', allow_relay_override: true });
    expect(res.status).toBe(200);
    expect(verifyCallToken(secret, res.body.token)).toMatchObject({ mode: 'relay', allowRelayOverride: true });
    expect(verifyCallToken(secret, res.body.token).relayUrl).toBeUndefined();
  });

  it('accepts the key as x-api-key too, and refuses a request without a valid key (401, nothing minted)', async () => {
    const viaHeader = await fetch(`${t.baseUrl}/telephony/v1/tokens`, {
      method: 'POST',
      headers: { 'x-api-key': t.apiKey, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(viaHeader.status).toBe(200);
    for (const key of [null, 'not-a-key', '00000000-0000-4000-8000-000000000000']) {
      const res = await mint({}, key);
      expect(res.status, String(key)).toBe(401);
      expect(res.body.error).toMatchObject({ type: 'authentication_error', code: 'invalid_api_key' });
      expect(res.body).not.toHaveProperty('token');
    }
  });

  it('answers a wrong body 400 with the field and a message that says what to do', async () => {
    const cases: [unknown, string, RegExp][] = [
      [{ relay_urll: 'wss://93.184.215.14/' }, 'invalid_value', /relay_urll|[Uu]nrecognized/],
      [{ ttl_seconds: 59 }, 'invalid_value', /ttl_seconds/],
      [{ ttl_seconds: 86_401 }, 'invalid_value', /ttl_seconds/],
      [{ ttl_seconds: 90.5 }, 'invalid_value', /ttl_seconds/],
      [{ language: 'de-DE' }, 'invalid_value', /language: unsupported language; use bam, fra or eng/],
      [{ transcription_language: 'xx' }, 'invalid_value', /transcription_language: unsupported language/],
      [{ interruptible: 'sometimes' }, 'invalid_value', /interruptible/],
      [{ mode: 'relay' }, 'missing_required_parameter', /relay_url: Field required: a relay call needs relay_url, or allow_relay_override/],
      [{ mode: 'transcription', relay_url: 'wss://93.184.215.14/' }, 'invalid_value', /relay_url: a transcription call/],
      [{ mode: 'transcription', allow_relay_override: true }, 'invalid_value', /allow_relay_override: applies to relay calls only/],
      [{ relay_url: 'https://93.184.215.14/' }, 'invalid_value', /relay_url: must be a ws:\/\/ or wss:\/\/ URL/],
      [{ relay_url: 'wss://' }, 'invalid_value', /relay_url: .*not an absolute URL/],
      [{ welcome_greeting: 'x'.repeat(1001) }, 'invalid_value', /welcome_greeting/],
      [[], 'invalid_value', /object/],
    ];
    for (const [body, code, message] of cases) {
      const res = await mint(body);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(res.body.error.code, JSON.stringify(body).slice(0, 80)).toBe(code);
      expect(res.body.error.message, JSON.stringify(body).slice(0, 80)).toMatch(message);
      expect(res.body.error.message).not.toMatch(/at .*\.ts:\d+/);
    }
    const notJson = await mint(null, t.apiKey, '{"mode":');
    expect(notJson.status).toBe(400);
    expect(notJson.body.error.code).toBe('invalid_json');
  });

  it('refuses a relay URL inside the operator network unless the allow-list names it', async () => {
    for (const url of [
      'wss://127.0.0.1:9000/ws',
      'ws://169.254.169.254/latest',
      'wss://10.0.0.8/ws',
      'wss://[::1]:9000/ws',
      'wss://[::ffff:192.168.0.1]/ws',
      'wss://2130706433/ws',
    ]) {
      const res = await mint({ relay_url: url });
      expect(res.status, url).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_value', param: 'relay_url' });
      expect(res.body.error.message, url).toMatch(/private or reserved address.*KUMA_OUTBOUND_ALLOW/);
    }
    // Listed explicitly: an address, and a host name the system resolver answers from /etc/hosts.
    expect((await mint({ relay_url: 'ws://127.0.0.2:9000/ws' })).status).toBe(200);
    const named = await mint({ relay_url: 'ws://localhost:9000/ws' });
    expect(named.status).toBe(200);
    expect(named.body.relay_url).toBe('ws://localhost:9000/ws');
  });

  it('refuses a relay host that is not on the allow-list of a server that lists only some hosts', async () => {
    const strict = await startTestServer({ config: { outboundAllow: 'relay.example.com' } });
    try {
      const res = await fetch(`${strict.baseUrl}/telephony/v1/tokens`, {
        method: 'POST',
        headers: { authorization: `Bearer ${strict.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ relay_url: 'wss://93.184.215.14/ws' }),
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as any).error.message).toMatch(/relay_url: the address 93\.184\.215\.14 is not on the outbound allow-list/);
    } finally {
      await strict.close();
    }
  });

  it('mints tokens that expire at expires_at', async () => {
    const res = await mint({ ttl_seconds: 60 });
    expect(verifyCallToken(secret, res.body.token, res.body.expires_at * 1000 - 1).expiresAt).toBe(res.body.expires_at);
    expect(() => verifyCallToken(secret, res.body.token, res.body.expires_at * 1000)).toThrow(CallTokenError);
    expect(() => verifyCallToken(secret, res.body.token, res.body.expires_at * 1000)).toThrow(/expired/);
  });

  it("stops a revoked key's tokens at the call-time check", async () => {
    const other = await t.newAccount(1_000_000);
    const res = await mint({}, other.apiKey);
    const claims = verifyCallToken(secret, res.body.token);
    expect(claims).toMatchObject({ accountId: other.accountId, keyId: other.keyId });
    await expect(checkCallTokenKey(t.server.store, claims)).resolves.toBeUndefined();
    await t.server.store.revokeKey(other.keyId);
    await expect(checkCallTokenKey(t.server.store, claims)).rejects.toMatchObject({ code: 'key_revoked' });
    // ... and the key itself can mint no more.
    expect((await mint({}, other.apiKey)).status).toBe(401);
  });

  it('is served under /telephony/v1 only, and described there in the OpenAPI document', async () => {
    const res = await fetch(`${t.baseUrl}/openai/v1/tokens`, { method: 'POST', headers: { authorization: `Bearer ${t.apiKey}` }, body: '{}' });
    expect(res.status).toBe(404);
    await res.text();
    const doc = (await (await fetch(`${t.baseUrl}/openai/v1/openapi.json`)).json()) as any;
    expect(doc.paths['/tokens'].servers).toEqual([{ url: '/telephony/v1' }]);
    expect(doc.paths['/tokens'].post.operationId).toBe('createTelephonyCallToken');
  });
});
