/**
 * Hostile carrier frames (seeded fast-check): random text, JSON shaped like each carrier's messages with
 * random values, random binary, an oversized frame — before and after a valid start with a real call token.
 * The server never fails: every stream ends with a documented close code (or stays open for a well-formed
 * call), no hold is left open, and a normal call is served afterwards.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { TestServer } from '../../helpers/test-server.js';
import { wsUrl } from '../../helpers/websocket-client.js';
import { dialCarrier, mintToken, startTelephonyServer } from '../../helpers/telephony.js';

// 1011 would be a failure of the server's own (a handler that threw): not among them.
const CLOSE_CODES = new Set([1000, 1008, 1009]);
const CARRIERS = ['twilio', 'telnyx', 'plivo', 'exotel', 'vonage'] as const;

let t: TestServer;
let token: string;
beforeAll(async () => {
  t = await startTelephonyServer({ telephonyStartTimeoutMs: 300 });
  token = await mintToken(t, { mode: 'transcription' });
}, 120_000);
afterAll(async () => {
  await t.close();
});

const value = fc.oneof(
  fc.string(),
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.base64String(),
  fc.array(fc.string(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.string(), { maxKeys: 3 }),
);
const carrierish = fc.record(
  {
    event: fc.constantFrom('connected', 'start', 'media', 'mark', 'dtmf', 'stop', 'clear', 'websocket:connected', 'playedStream', 'error', 'x'),
    streamSid: value,
    stream_id: value,
    sequenceNumber: value,
    start: fc.oneof(
      value,
      fc.record(
        { streamSid: value, callSid: value, customParameters: fc.oneof(value, fc.constant({ token: 'kct1.x.y' })), mediaFormat: value },
        { requiredKeys: [] },
      ),
    ),
    media: fc.oneof(value, fc.record({ track: value, chunk: value, timestamp: value, payload: fc.oneof(value, fc.base64String()) }, { requiredKeys: [] })),
    mark: value,
    dtmf: value,
  },
  { requiredKeys: ['event'] },
);
const frame = fc.oneof(
  fc.string().map((text) => ({ text })),
  carrierish.map((o) => ({ text: JSON.stringify(o) })),
  fc.uint8Array({ maxLength: 700 }).map((binary) => ({ binary })),
);

/** Sends the frames; resolves with the close code, or null when the stream stayed open (then closes it). */
async function hurl(carrier: (typeof CARRIERS)[number], frames: Array<{ text: string } | { binary: Uint8Array }>, withStart: boolean): Promise<number | null> {
  const ws = new WebSocket(wsUrl(t.baseUrl, `/telephony/v1/${carrier}${withStart ? `?token=${token}` : ''}`));
  const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
  ws.on('error', () => {});
  await new Promise((resolve) => ws.once('open', resolve));
  for (const f of frames) ws.send('text' in f ? f.text : f.binary, { binary: 'binary' in f });
  const code = await Promise.race([closed, new Promise<null>((resolve) => setTimeout(() => resolve(null), 400))]);
  if (code === null) {
    ws.close();
    await closed;
  }
  return code;
}

describe('hostile carrier frames', () => {
  for (const carrier of CARRIERS) {
    it(`${carrier}: random frames end in a documented close, never a failure of the server`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(frame, { minLength: 1, maxLength: 6 }), fc.boolean(), async (frames, withStart) => {
          const code = await hurl(carrier, frames, withStart);
          return code === null || CLOSE_CODES.has(code);
        }),
        { numRuns: 40, seed: 11 },
      );
    }, 60_000);
  }

  it('a frame over 64 KiB is closed 1009; the server then serves a normal call; no hold is left open', async () => {
    expect(await hurl('twilio', [{ text: JSON.stringify({ event: 'media', pad: 'x'.repeat(70_000) }) }], false)).toBe(1009);
    const { call, closed } = await dialCarrier(t, 'twilio', { token });
    await call.silence(200);
    call.hangup();
    expect((await closed).code).toBe(1000);
    await expect.poll(() => t.server.ledger.openReservations, { timeout: 5000 }).toBe(0);
    // Nothing the carriers sent was a failure of the server's own (logged at error level).
    expect(t.logs.map((line) => JSON.parse(line)).filter((l) => l.level >= 50)).toEqual([]);
  });
});
