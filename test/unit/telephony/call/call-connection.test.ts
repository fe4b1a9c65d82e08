/**
 * The carrier connection's bookkeeping when the carrier leaves mid-setup: a stream that closes while its call
 * is being created still gives the call's place back (the account's concurrent-call cap), exactly once.
 */
import { describe, expect, it } from 'vitest';
import type { DuplexPeer } from '../../../../src/duplex/duplex-contract.js';
import { createCarrierAdapter } from '../../../../src/telephony/carriers/index.js';
import { callConnection, type CallGrant, type CallOpener } from '../../../../src/telephony/call/call-connection.js';
import type { CallSession } from '../../../../src/telephony/call/call-session.js';

const grant: CallGrant = {
  accountId: 'acct_1',
  keyId: 'key_1',
  settings: {
    mode: 'transcription',
    relayUrl: null,
    transcriptionLanguage: 'bam',
    ttsLanguage: 'bam',
    welcomeGreeting: null,
    welcomeGreetingInterruptible: true,
    interruptible: 'any',
  },
};

function peerAndCloser(): { peer: DuplexPeer; close: () => void } {
  const controller = new AbortController();
  const peer: DuplexPeer = {
    requestId: 'call_test',
    signal: controller.signal,
    sendText: () => 'sent',
    sendBinary: () => 'sent',
    bufferedAmount: () => 0,
    drained: async () => {},
    flushed: async () => true,
    close: () => controller.abort(),
    authenticated: () => {},
  };
  return { peer, close: () => controller.abort() };
}

describe('callConnection', () => {
  it('a stream closed while its call is being created gives the call place back once', async () => {
    let finishCreate!: () => void;
    const ended: string[] = [];
    let released = 0;
    const opener: CallOpener = {
      authorize: async () => grant,
      createCall: () =>
        new Promise(
          (resolve) => (finishCreate = () => resolve({ close: async (reason: string) => void ended.push(reason), closed: false } as unknown as CallSession)),
        ),
      connectApp: async () => {
        throw new Error('not reached');
      },
      released: () => void released++,
      startTimeoutMs: 10_000,
      logger: { info() {}, warn() {}, error() {} } as never,
    };
    const { peer, close } = peerAndCloser();
    const handler = callConnection(opener, createCarrierAdapter('twilio'), 'call_test', grant, peer);
    handler.onText(JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' }));
    const start = {
      streamSid: 'MZ1',
      callSid: 'CA1',
      accountSid: 'AC1',
      tracks: ['inbound'],
      customParameters: {},
      mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
    };
    handler.onText(JSON.stringify({ event: 'start', sequenceNumber: '1', start, streamSid: 'MZ1' }));
    await new Promise((resolve) => setImmediate(resolve));
    close();
    handler.onClose(1006, '');
    finishCreate();
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(released).toBe(1);
    expect(ended).toEqual(['caller_hangup']);
  });
});
