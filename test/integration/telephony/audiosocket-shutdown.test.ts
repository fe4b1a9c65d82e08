/**
 * Server shutdown with phone calls in progress: an AudioSocket call (TCP listener) ends as a WebSocket carrier's
 * call does — told at the start of KUMA_SHUTDOWN_GRACE_MS, recorded with reason `shutdown`, hung up with the
 * AudioSocket hangup frame — and before the grace period is over. A connection that never started a call is
 * hung up and closed when the grace period is over, so it cannot hold the shutdown.
 */
import path from 'node:path';
import { connect as tcpConnect, type Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { generateApiKey, hashApiKey } from '../../../src/auth/api-keys.js';
import { openSqliteStore } from '../../../src/store/sqlite-store.js';
import type { CallRecord } from '../../../src/store/store.js';
import type { TestServer } from '../../helpers/test-server.js';
import { startRelayApp, type RelayApp } from '../../helpers/relay-app.js';
import { connectAudioSocket } from '../../helpers/carriers/index.js';
import { dialCarrier, mintToken, startTelephonyServer } from '../../helpers/telephony.js';

const GRACE_MS = 5000;
const AUDIOSOCKET_KEY = generateApiKey();

let t: TestServer | undefined;
let app: RelayApp | undefined;
afterAll(async () => {
  await t?.close();
  await app?.close();
});

/** A TCP connection to the listener that sends nothing: it notes when Kuma closes it, and whether a hangup frame came first. */
function idleConnection(port: number): Promise<{ socket: Socket; bytes: number[]; closedAt: Promise<number> }> {
  return new Promise((resolve, reject) => {
    const socket = tcpConnect({ port, host: '127.0.0.1' });
    const bytes: number[] = [];
    socket.on('data', (chunk: Buffer) => bytes.push(...chunk));
    const closedAt = new Promise<number>((done) => socket.on('close', () => done(Date.now())));
    socket.once('error', reject);
    socket.once('connect', () => resolve({ socket, bytes, closedAt }));
  });
}

describe('shutdown with calls in progress', () => {
  it('an AudioSocket call ends as `shutdown` within the grace period, as a Twilio call does; an idle connection is hung up at its end', async () => {
    app = await startRelayApp();
    t = await startTelephonyServer({
      shutdownGraceMs: GRACE_MS,
      // Longer than the grace period: the idle connection is closed by the shutdown, not for sending no UUID.
      telephonyStartTimeoutMs: 60_000,
      audioSocketPort: 0,
      audioSocketApiKey: AUDIOSOCKET_KEY,
      audioSocketSettings: JSON.stringify({ relay_url: app.url }),
    });
    await t.server.store.createKey(t.accountId, hashApiKey(AUDIOSOCKET_KEY), 'pbx');

    // Both calls are live: each has its relay link up.
    const audioSocketLink = app.nextConnection();
    const pbx = await connectAudioSocket(t.server.audioSocketPort!, '127.0.0.1');
    pbx.open();
    await (await audioSocketLink).next('setup');
    const twilioLink = app.nextConnection();
    const twilio = await dialCarrier(t, 'twilio', {}, `?token=${await mintToken(t, { relay_url: app.url })}`);
    await (await twilioLink).next('setup');
    const idle = await idleConnection(t.server.audioSocketPort!);

    const closeStartedAt = Date.now();
    await t.server.close();

    // The stored call records (the server closed its store: read the file it wrote).
    const store = await openSqliteStore(path.join(t.dir, 'kuma.sqlite'));
    let calls: CallRecord[];
    try {
      calls = await store.listCalls({ accountId: t.accountId });
    } finally {
      await store.close();
    }
    const byCarrier = new Map(calls.map((c) => [c.carrier, c]));
    expect(byCarrier.get('twilio')?.endReason).toBe('shutdown');
    expect(await twilio.closed).toEqual({ code: 1000, reason: 'shutdown' });

    const audioSocket = byCarrier.get('audiosocket');
    expect(audioSocket?.endReason).toBe('shutdown');
    // Hung up by Kuma (the hangup frame) once told, within the grace period: before the cut at its end, which
    // is what closed the connection that had no call (a hangup frame, then the close).
    expect(pbx.log.hangups.length).toBe(1);
    const endedAt = Date.parse(audioSocket!.endedAt);
    expect(endedAt).toBeGreaterThanOrEqual(closeStartedAt);
    expect(endedAt).toBeLessThan(closeStartedAt + GRACE_MS);
    expect(idle.bytes).toEqual([0x00, 0x00, 0x00]);
    expect(endedAt).toBeLessThan(await idle.closedAt);
  }, 120_000);
});
