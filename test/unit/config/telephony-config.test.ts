/** The telephony settings: a short token secret or a bad allow-list entry stops the server at start, naming the variable. */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config/config.js';

describe('telephony configuration', () => {
  it('defaults to a stored secret, an empty allow-list and no Twilio signature check', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ telephonySecret: '', outboundAllow: '', twilioAuthToken: '' });
  });

  it('refuses a KUMA_TELEPHONY_SECRET under 32 bytes', () => {
    expect(() => loadConfig({ KUMA_TELEPHONY_SECRET: 'x'.repeat(31) })).toThrow(ConfigError);
    expect(() => loadConfig({ KUMA_TELEPHONY_SECRET: 'x'.repeat(31) })).toThrow(/KUMA_TELEPHONY_SECRET.*32 bytes/);
    expect(loadConfig({ KUMA_TELEPHONY_SECRET: 'x'.repeat(32) }).telephonySecret).toBe('x'.repeat(32));
  });

  it('refuses a KUMA_OUTBOUND_ALLOW entry it cannot read, naming it', () => {
    expect(() => loadConfig({ KUMA_OUTBOUND_ALLOW: 'bot.example.com, https://x.example.com' })).toThrow(/KUMA_OUTBOUND_ALLOW.*https:\/\/x\.example\.com/);
    expect(loadConfig({ KUMA_OUTBOUND_ALLOW: '*.example.com, 10.0.0.0/8' }).outboundAllow).toBe('*.example.com, 10.0.0.0/8');
  });
});
