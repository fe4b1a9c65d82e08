/**
 * The gate of a socket whose credential comes in its first message: while the credential is checked it holds
 * at most MAX_HELD_FRAMES messages / MAX_HELD_BYTES (then refuses the socket, whatever the client sends), and
 * never opens the route's session for a socket that closed meanwhile (the session's places are given back);
 * once open, the held messages reach the route's handler in order, the first one included.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/api/errors.js';
import { firstMessageSession, MAX_HELD_BYTES, MAX_HELD_FRAMES, type FirstMessageAuth } from '../../../src/api/first-message-auth.js';
import type { DuplexResult } from '../../../src/api/types.js';
import type { DuplexHandler, DuplexPeer } from '../../../src/duplex/duplex-contract.js';

function fakePeer() {
  const controller = new AbortController();
  const sent: string[] = [];
  const closes: Array<[number, string]> = [];
  let authenticated = 0;
  const peer: DuplexPeer = {
    requestId: 'req_test',
    signal: controller.signal,
    sendText: (text) => (sent.push(text), 'sent'),
    sendBinary: () => 'sent',
    bufferedAmount: () => 0,
    drained: async () => {},
    flushed: async () => true,
    close: (code, reason) => {
      closes.push([code, reason]);
      controller.abort();
    },
    authenticated: () => void authenticated++,
  };
  return { peer, sent, closes, authenticated: () => authenticated };
}

const spec: FirstMessageAuth = {
  credential: (frame) => (JSON.parse(frame) as { key?: string }).key,
  refusal: (err, closeCode) => JSON.stringify({ error: err.code, code: closeCode }),
};

/** A late check the test resolves when it wants; the session records what its handler received. */
function deferredAuth() {
  const received: string[] = [];
  let abandoned = 0;
  let settle!: (ok: boolean) => void;
  const handler: DuplexHandler = { onText: (t) => void received.push(t), onBinary: () => {}, onClose: () => {} };
  const session: DuplexResult = { kind: 'duplex', open: () => handler };
  const authorize = (credential: string) =>
    new Promise<{ session: DuplexResult; abandon: () => Promise<void> }>((resolve, reject) => {
      settle = (ok) =>
        ok && credential === 'good' ? resolve({ session, abandon: async () => void abandoned++ }) : reject(new ApiError('invalid_api_key', 'no'));
    });
  return { authorize, received, settle: (ok: boolean) => settle(ok), abandoned: () => abandoned };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('first-message gate', () => {
  it('holds what comes while the credential is checked, within its bounds, and hands it on in order once open', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.string({ maxLength: 9000 }), { maxLength: 24 }), async (texts) => {
        const peer = fakePeer();
        const auth = deferredAuth();
        const gate = firstMessageSession(spec, undefined, auth.authorize).open(peer.peer);
        const first = JSON.stringify({ key: 'good', text: ' ' });
        gate.onText(first);
        const frames = texts.map((text) => JSON.stringify({ text }));
        for (const frame of frames) gate.onText(frame);
        const held = [first, ...frames];
        const fits = held.length <= MAX_HELD_FRAMES && held.reduce((n, f) => n + Buffer.byteLength(f), 0) <= MAX_HELD_BYTES;
        auth.settle(true);
        await tick();
        if (fits) {
          expect(auth.received).toEqual(held);
          expect([peer.authenticated(), peer.closes.length]).toEqual([1, 0]);
        } else {
          // Refused as soon as the bound was passed: nothing reached the route, the session never opened.
          expect(auth.received).toEqual([]);
          expect(peer.closes).toEqual([[1008, 'invalid_request']]);
          expect([peer.authenticated(), auth.abandoned()]).toEqual([0, 1]);
        }
      }),
      { numRuns: 40 },
    );
  });

  it('a socket closed while its credential is checked never opens its session: the session is abandoned', async () => {
    const peer = fakePeer();
    const auth = deferredAuth();
    const gate = firstMessageSession(spec, undefined, auth.authorize).open(peer.peer);
    gate.onText(JSON.stringify({ key: 'good' }));
    gate.onClose(1001, 'gone');
    auth.settle(true);
    await tick();
    expect([auth.received, peer.authenticated(), auth.abandoned()]).toEqual([[], 0, 1]);
  });

  it('a refused credential is answered in the route’s shape, then close 1008; later messages are ignored', async () => {
    const peer = fakePeer();
    const auth = deferredAuth();
    const gate = firstMessageSession(spec, undefined, auth.authorize).open(peer.peer);
    gate.onText(JSON.stringify({ key: 'bad' }));
    auth.settle(true);
    await tick();
    gate.onText(JSON.stringify({ text: 'more' }));
    expect(peer.sent.map((s) => JSON.parse(s))).toEqual([{ error: 'invalid_api_key', code: 1008 }]);
    expect(peer.closes).toEqual([[1008, 'invalid_api_key']]);
    expect(auth.received).toEqual([]);
  });
});
