/**
 * The simulated call over a real socket: a `ws` server standing in for Kuma uses the Twilio adapter to read
 * what the simulated carrier streams and to answer with audio, a mark and a clear. Asserts orderings and
 * counts (no timings): every caller frame arrives whole and in order, a mark is echoed only after the audio
 * queued before it has played, and a clear drops the queue and returns the pending mark.
 */
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import type { CarrierInbound } from '../../../../src/telephony/carriers/contract.js';
import { createTwilioAdapter } from '../../../../src/telephony/carriers/twilio.js';
import { simulateTwilio } from '../../../helpers/carriers/twilio.js';

const servers: WebSocketServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

/** A server that parses every frame with a Twilio adapter; `onEvent` may answer through `send`. */
async function kuma(onEvent: (e: CarrierInbound, send: (f: { text: string }) => void, adapter: ReturnType<typeof createTwilioAdapter>) => void) {
  const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  servers.push(server);
  const events: CarrierInbound[] = [];
  server.on('connection', (socket) => {
    const adapter = createTwilioAdapter();
    socket.on('message', (data) => {
      for (const e of adapter.parseText(String(data))) {
        events.push(e);
        onEvent(e, (f) => socket.send(f.text), adapter);
      }
    });
  });
  await new Promise((r) => server.once('listening', r));
  const ws = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}`);
  await new Promise((r) => ws.once('open', r));
  return { ws, events };
}

describe('simulated Twilio call over a socket', () => {
  it('streams the documented order: connected, start with the token, whole 160-byte media frames, dtmf, stop', async () => {
    const { ws, events } = await kuma(() => {});
    const call = simulateTwilio(ws, { customParameters: { token: 'tok' }, speed: Infinity });
    call.open();
    await call.speak(new Int16Array(8000 / 2 + 17)); // 0.5 s and a partial frame
    call.dtmf('4');
    call.hangup();
    await new Promise((r) => ws.once('close', r));
    const types = events.map((e) => e.type);
    expect(types[0]).toBe('connected');
    expect(events[1]).toMatchObject({ type: 'start', start: { customParameters: { token: 'tok' } } });
    const media = events.filter((e) => e.type === 'media');
    expect(media).toHaveLength(Math.ceil((8000 / 2 + 17) / 160));
    expect(media.every((e) => e.type === 'media' && e.audio.length === 160)).toBe(true);
    expect(types.slice(-2)).toEqual(['dtmf', 'stop']);
  });

  it('echoes a mark only after the audio queued before it has played', async () => {
    const { ws } = await kuma((e, send, adapter) => {
      if (e.type !== 'start') return;
      for (let i = 0; i < 10; i++) send(adapter.media(new Uint8Array(160).fill(i)) as { text: string });
      send(adapter.mark('after-200ms') as { text: string });
    });
    const call = simulateTwilio(ws, { speed: 20 });
    call.open();
    await call.waitFor((log) => log.marks[0]?.echoedAt != null);
    const lastAudio = call.log.audio.at(-1)!;
    expect(call.log.audio).toHaveLength(10);
    expect(call.log.marks[0]!.echoedAt!).toBeGreaterThanOrEqual(lastAudio.playEnd - 1);
    expect(call.receivedPcm()).toHaveLength(10 * 160);
    expect(call.log.protocolErrors).toEqual([]);
    ws.close();
  });

  it('a clear drops queued audio, cuts what was playing, and returns the pending mark', async () => {
    const { ws } = await kuma((e, send, adapter) => {
      if (e.type !== 'start') return;
      for (let i = 0; i < 250; i++) send(adapter.media(new Uint8Array(160).fill(0x55)) as { text: string }); // 5 s
      send(adapter.mark('end') as { text: string });
      send(adapter.clear() as { text: string });
    });
    const call = simulateTwilio(ws, { speed: 1 });
    call.open();
    await call.waitFor((log) => log.clears.length === 1 && log.marks[0]?.echoedAt != null);
    expect(call.log.audio).toHaveLength(250);
    expect(call.log.clears[0]!.droppedMs).toBeGreaterThan(0);
    expect(call.playedPcm().length).toBeLessThan(call.receivedPcm().length);
    expect(call.log.protocolErrors).toEqual([]);
    ws.close();
  });

  it("logs a frame that is not Twilio's protocol as a protocol error", async () => {
    const { ws } = await kuma((e, send) => {
      if (e.type === 'start') send({ text: JSON.stringify({ event: 'media', streamSid: 'wrong', media: { payload: 'AA==' } }) });
    });
    const call = simulateTwilio(ws, { speed: Infinity });
    call.open();
    await call.waitFor((log) => log.protocolErrors.length > 0);
    expect(call.log.protocolErrors[0]).toMatch(/streamSid/);
    ws.close();
  });
});
