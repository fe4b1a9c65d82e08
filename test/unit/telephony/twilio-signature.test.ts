/**
 * X-Twilio-Signature verification against vectors computed here from Twilio's documented algorithm
 * (HMAC-SHA1 with the auth token over the full URL + sorted POST parameters as name+value, base64), Twilio's
 * own published example, the standard-port quirk, and the URL-only signature of a WebSocket upgrade.
 */
import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { twilioSignature, verifyTwilioSignature } from '../../../src/telephony/twilio-signature.js';

/** The documented algorithm, written out independently of the code under test. */
function reference(token: string, url: string, params: Record<string, string> = {}): string {
  const data =
    url +
    Object.keys(params)
      .sort()
      .map((k) => k + params[k])
      .join('');
  return createHmac('sha1', token).update(data).digest('base64');
}

const TOKEN = 'f3c1b2a4d5e6f7a8b9c0d1e2f3a4b5c6';

describe('X-Twilio-Signature', () => {
  it("matches Twilio's published example", () => {
    const url = 'https://mycompany.com/myapp.php?foo=1&bar=2';
    const params = { CallSid: 'CA1234567890ABCDE', Caller: '+12349013030', Digits: '1234', From: '+12349013030', To: '+18005551212' };
    expect(twilioSignature('12345', url, params)).toBe('0/KCTR6DLpKmkAf8muzZqo1nDgQ=');
    expect(verifyTwilioSignature('12345', '0/KCTR6DLpKmkAf8muzZqo1nDgQ=', url, params)).toBe(true);
    expect(verifyTwilioSignature('12345', '0/KCTR6DLpKmkAf8muzZqo1nDgQ=', url, { ...params, Digits: '1235' })).toBe(false);
  });

  it('verifies any form body and URL signed by the documented algorithm, and refuses a changed one', () => {
    const name = fc.string({ minLength: 1, maxLength: 12 });
    fc.assert(
      fc.property(fc.webUrl({ withQueryParameters: true }), fc.dictionary(name, fc.string({ maxLength: 20 }), { maxKeys: 6 }), (url, params) => {
        const signature = reference(TOKEN, url, params);
        expect(verifyTwilioSignature(TOKEN, signature, url, params)).toBe(true);
        expect(verifyTwilioSignature(TOKEN, signature, url, { ...params, Extra: `${params.Extra ?? ''}x` })).toBe(false);
        expect(verifyTwilioSignature(TOKEN, signature, `${url}x`, params)).toBe(false);
        expect(verifyTwilioSignature(`${TOKEN}x`, signature, url, params)).toBe(false);
      }),
      { numRuns: 100 },
    );
  });

  it('signs a WebSocket upgrade over the URL alone (query included)', () => {
    const url = 'wss://kuma.example.com/telephony/v1/twilio?token=kct1.abc.def';
    const signature = reference(TOKEN, url);
    expect(verifyTwilioSignature(TOKEN, signature, url)).toBe(true);
    expect(verifyTwilioSignature(TOKEN, signature, url.replace('abc', 'abd'))).toBe(false);
    expect(verifyTwilioSignature(TOKEN, signature, 'wss://kuma.example.com/telephony/v1/twilio')).toBe(false);
  });

  it('accepts a URL signed with or without the standard port, but not another port', () => {
    const bare = 'https://kuma.example.com/telephony/v1/twilio?token=a%3Ab';
    const withPort = 'https://kuma.example.com:443/telephony/v1/twilio?token=a%3Ab';
    expect(verifyTwilioSignature(TOKEN, reference(TOKEN, withPort), bare)).toBe(true);
    expect(verifyTwilioSignature(TOKEN, reference(TOKEN, bare), withPort)).toBe(true);
    expect(verifyTwilioSignature(TOKEN, reference(TOKEN, 'wss://k.example:443/x'), 'wss://k.example/x')).toBe(true);
    expect(verifyTwilioSignature(TOKEN, reference(TOKEN, 'http://k.example:80/x'), 'http://k.example/x')).toBe(true);
    expect(verifyTwilioSignature(TOKEN, reference(TOKEN, 'https://k.example:8443/x'), 'https://k.example/x')).toBe(false);
    expect(verifyTwilioSignature(TOKEN, reference(TOKEN, 'https://k.example:80/x'), 'https://k.example/x')).toBe(false);
    // The query is used as received: a re-encoded one is another URL.
    expect(verifyTwilioSignature(TOKEN, reference(TOKEN, 'https://kuma.example.com/telephony/v1/twilio?token=a:b'), bare)).toBe(false);
  });

  it('orders repeated parameters by value, each as name+value', () => {
    const url = 'https://k.example/hook';
    const expected = createHmac('sha1', TOKEN).update(`${url}Aa1Ab2Za0`).digest('base64');
    expect(twilioSignature(TOKEN, url, { Z: 'a0', A: ['b2', 'a1'] })).toBe(expected);
    expect(twilioSignature(TOKEN, url, new URLSearchParams('Z=a0&A=b2&A=a1'))).toBe(expected);
  });

  it('refuses a missing signature, an unconfigured token and junk', () => {
    const url = 'https://k.example/x';
    expect(verifyTwilioSignature(TOKEN, undefined, url)).toBe(false);
    expect(verifyTwilioSignature(TOKEN, '', url)).toBe(false);
    expect(verifyTwilioSignature('', reference('', url), url)).toBe(false);
    expect(verifyTwilioSignature(TOKEN, 'not base64 at all \u0000', url)).toBe(false);
  });
});
