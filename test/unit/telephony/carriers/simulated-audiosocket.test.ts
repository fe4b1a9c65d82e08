/**
 * The simulated AudioSocket client over real TCP against a listener that reads with Kuma's adapter: the UUID
 * starts the call, every 20 ms frame arrives whole however TCP cut the stream, and the adapter's hangup frame
 * reaches the client as a hangup.
 */
import { createServer, type AddressInfo, type Server } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createAudioSocketAdapter } from '../../../../src/telephony/carriers/audiosocket.js';
import type { CarrierInbound } from '../../../../src/telephony/carriers/contract.js';
import { connectAudioSocket } from '../../../helpers/carriers/audiosocket.js';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

describe('simulated AudioSocket call over TCP', () => {
  it('delivers the UUID, whole audio frames, DTMF and hangup; the server hangup reaches the client', async () => {
    const events: CarrierInbound[] = [];
    const server = createServer((socket) => {
      const adapter = createAudioSocketAdapter();
      socket.on('data', (chunk) => {
        for (const e of adapter.parseBinary(chunk)) {
          events.push(e);
          if (e.type === 'dtmf') for (const f of adapter.hangup()) socket.write('binary' in f ? f.binary : f.text);
        }
      });
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const call = await connectAudioSocket((server.address() as AddressInfo).port, '127.0.0.1', {
      speed: Infinity,
      uuid: '11111111-2222-3333-4444-555555555555',
    });
    call.open();
    await call.speak(new Int16Array(8000).fill(1000)); // 1 s = 50 frames
    call.dtmf('#');
    await call.waitFor((log) => log.hangups.length === 1);
    call.hangup();
    await vi.waitFor(() => expect(events.at(-1)).toEqual({ type: 'stop', reason: 'hangup' }));
    expect(events[0]).toMatchObject({ type: 'start', start: { callId: '11111111-2222-3333-4444-555555555555', format: { codec: 'l16', sampleRate: 8000 } } });
    const media = events.filter((e) => e.type === 'media');
    expect(media).toHaveLength(50);
    expect(media.every((e) => e.type === 'media' && e.audio.length === 320)).toBe(true);
    expect(events.filter((e) => e.type === 'dtmf')).toEqual([{ type: 'dtmf', digit: '#' }]);
    expect(call.log.protocolErrors).toEqual([]);
  });
});
