/**
 * Carrier streams opened without a token (P12 item 1): the socket is open before anyone is authenticated
 * (the token may come in the start message), so it is bounded: caps on such pre-auth sockets in all and per
 * client address (refused before the upgrade: 503 / 429 with Retry-After), a message bound on the carrier
 * routes that drops a socket announcing a frame over 128 KiB before reading it, at most 8 pings, a short
 * window for the start message, and a metric for each refusal. The caps here are
 * small (4 per address, 6 in all) so they can be filled; addresses 127.0.0.x are separate clients.
 */
import type net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../../helpers/test-server.js';
import { dialCarrier, mintToken, startTelephonyServer } from '../../helpers/telephony.js';
import { floodPings, hugeFrameHeader, maskedFrame, rawUpgrade, serverCloses } from '../../helpers/hostile-sockets.js';
import { OPCODE } from '../../../load-tests/realtime/websocket-frames.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTelephonyServer({ wsPreAuthMaxSockets: 6, wsPreAuthMaxPerAddress: 4, telephonyStartTimeoutMs: 3000 });
}, 120_000);
afterAll(() => t.close());

async function metric(pattern: RegExp): Promise<number> {
  const text = await (await fetch(`${t.baseUrl}/metrics`)).text();
  return Number(pattern.exec(text)?.[1] ?? 0);
}
const preAuthOpen = () => metric(/^kuma_websocket_preauth_sockets (\d+)/m);
const refusals = (reason: string) => metric(new RegExp(`^kuma_websocket_refusals_total\\{route="/telephony/v1/twilio",reason="${reason}"\\} (\\d+)`, 'm'));

/** Opens `n` twilio streams without a token from `address`; returns the answers (101 or the refusal). */
const openFrom = (address: string, n: number) =>
  Promise.all(Array.from({ length: n }, () => rawUpgrade(t.server.port, '/telephony/v1/twilio', { localAddress: address })));
const closeAll = async (sockets: { socket: net.Socket }[]) => {
  for (const s of sockets) s.socket.destroy();
  await expect.poll(preAuthOpen).toBe(0);
};

describe('pre-auth carrier streams', () => {
  it('a stream without a token is counted as pre-auth until its start message authenticates it', async () => {
    const token = await mintToken(t, { mode: 'transcription' });
    const waiting = await openFrom('127.0.0.1', 1);
    expect(waiting[0]!.status).toBe(101);
    expect(await preAuthOpen()).toBe(1);
    const { ws, closed } = await dialCarrier(t, 'twilio', { token });
    await expect.poll(() => metric(/^kuma_telephony_calls_active\{carrier="twilio"\} (\d+)/m)).toBe(1);
    expect(await preAuthOpen()).toBe(1); // only the one still waiting
    ws.close();
    await closed;
    await closeAll(waiting);
  });

  it('a stream with ?token= is authenticated before the upgrade and not counted', async () => {
    const token = await mintToken(t, { mode: 'transcription' });
    const opened = await rawUpgrade(t.server.port, `/telephony/v1/twilio?token=${encodeURIComponent(token)}`);
    expect(opened.status).toBe(101);
    expect(await preAuthOpen()).toBe(0);
    opened.socket.destroy();
  });

  it('the per-address cap: the 5th pre-auth stream from one address is refused 429 before the upgrade; another address still gets in', async () => {
    const before = await refusals('preauth_address_limit');
    const first = await openFrom('127.0.0.2', 4);
    expect(first.map((a) => a.status)).toEqual([101, 101, 101, 101]);
    const fifth = (await openFrom('127.0.0.2', 1))[0]!;
    expect(fifth.status).toBe(429);
    expect(fifth.head).toMatch(/^retry-after: 1$/im);
    expect(JSON.parse(fifth.body)).toMatchObject({ error: { code: 'rate_limit_exceeded', type: 'requests' } });
    expect(await refusals('preauth_address_limit')).toBe(before + 1);
    const other = (await openFrom('127.0.0.3', 1))[0]!;
    expect(other.status).toBe(101);
    await closeAll([...first, fifth, other]);
    // The places came back: the address may open streams again.
    const again = await openFrom('127.0.0.2', 4);
    expect(again.map((a) => a.status)).toEqual([101, 101, 101, 101]);
    await closeAll(again);
  });

  it('the total cap: with 6 pre-auth streams open, the next is refused 503 whatever its address', async () => {
    const before = await refusals('preauth_limit');
    const open = [...(await openFrom('127.0.0.4', 3)), ...(await openFrom('127.0.0.5', 3))];
    expect(open.every((a) => a.status === 101)).toBe(true);
    const refused = (await openFrom('127.0.0.6', 1))[0]!;
    expect(refused.status).toBe(503);
    expect(refused.head).toMatch(/^retry-after: 1$/im);
    expect(JSON.parse(refused.body)).toMatchObject({ error: { code: 'service_unavailable' } });
    expect(await refusals('preauth_limit')).toBe(before + 1);
    await closeAll([...open, refused]);
  });

  it('a stream that never sends start is closed 1008 start_timeout and gives its place back (counted by reason)', async () => {
    const before = await refusals('start_timeout');
    const [stream] = await openFrom('127.0.0.7', 1);
    expect(await serverCloses(stream!.socket, 10_000)).toBe(true);
    expect(await preAuthOpen()).toBe(0);
    expect(await refusals('start_timeout')).toBe(before + 1);
  });

  it('a frame header announcing 64 MiB drops the socket at once, before any of it is read (message_too_big)', async () => {
    const before = await refusals('message_too_big');
    const [stream] = await openFrom('127.0.0.8', 1);
    stream!.socket.write(hugeFrameHeader(64 * 1024 * 1024));
    stream!.socket.write(Buffer.alloc(1024, 1)); // a little of the payload; the rest never comes
    expect(await serverCloses(stream!.socket, 5000)).toBe(true);
    expect(await refusals('message_too_big')).toBe(before + 1);
    expect(await preAuthOpen()).toBe(0);
  });

  it('a frame over 64 KiB but within the bound is still refused by the carrier connection: 1009 frame_too_big', async () => {
    const [stream] = await openFrom('127.0.0.9', 1);
    const socket = stream!.socket;
    const answer: Buffer[] = [];
    socket.on('data', (d: Buffer) => answer.push(d));
    socket.resume();
    socket.write(maskedFrame(OPCODE.text, Buffer.alloc(100 * 1024, 0x61)));
    expect(await serverCloses(socket, 5000)).toBe(true);
    const frame = Buffer.concat(answer);
    expect(frame[0]).toBe(0x88); // a close frame…
    expect(frame.readUInt16BE(2)).toBe(1009); // …with 1009
    expect(frame.subarray(4, 2 + frame[1]!).toString()).toBe('frame_too_big');
  });

  it('a pre-auth client may ping a few times; one that floods pings (never reading) is dropped at the 9th (ping_flood)', async () => {
    const [polite] = await openFrom('127.0.0.10', 1);
    const pongs: Buffer[] = [];
    polite!.socket.on('data', (d: Buffer) => pongs.push(d));
    polite!.socket.resume();
    for (let i = 0; i < 8; i++) polite!.socket.write(maskedFrame(OPCODE.ping, Buffer.from(`p${i}`)));
    await expect.poll(() => Buffer.concat(pongs).length).toBe(8 * 4); // 8 pongs of 2 + 2 bytes
    expect(polite!.socket.destroyed).toBe(false);
    polite!.socket.destroy();

    const before = await refusals('ping_flood');
    const [stream] = await openFrom('127.0.0.10', 1);
    // Before, uWS queued a pong for each, up to its maxBackpressure (≈ 68 MiB): the whole 64 MiB went through.
    const written = await floodPings(stream!.socket, 64 * 1024 * 1024);
    expect(written).toBeLessThan(64 * 1024 * 1024);
    await expect.poll(() => refusals('ping_flood')).toBe(before + 1);
    expect(await preAuthOpen()).toBe(0);
    stream!.socket.destroy();
  }, 60_000);
});
