/**
 * A call ends once, however many of its edges end it at the same time (the caller hanging up, the app
 * leaving, a revoked key, shutdown…): the first reason is the call's. Its carrier is hung up once (never
 * when the caller hung up), its app and observer are told once, one record is written, and its signal fires
 * once with that reason — in relay mode and in transcription mode, which first hears the caller's last turn.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SessionClosedError } from '../../../../src/primitives/session-lifecycle.js';
import type { CallSettings } from '../../../../src/telephony/call-settings.js';
import type { CallApp, CallCarrier, CallDeps, CallEndReason } from '../../../../src/telephony/call/call-contract.js';
import { CallSession } from '../../../../src/telephony/call/call-session.js';
import type { CallRecord } from '../../../../src/store/store.js';

const REASONS: CallEndReason[] = [
  'caller_hangup',
  'shutdown',
  'app_ended',
  'app_disconnected',
  'app_unreachable',
  'insufficient_quota',
  'key_revoked',
  'error',
  'malformed_frame',
  'frame_too_big',
  'server_error',
];

function openCall(mode: CallSettings['mode']) {
  const seen = { hangups: [] as string[], appEnded: [] as string[], observed: [] as string[], records: [] as CallRecord[], aborts: 0 };
  const quiet = () => {};
  const deps = {
    store: { listUsage: async () => [], recordCall: async (record: CallRecord) => void seen.records.push(record) },
    ledger: {},
    logger: { info: quiet, warn: quiet, error: quiet },
    pacer: { stream: () => ({}), leadMs: 0 },
    vad: null,
    asr: { id: 'sunjata-1', engine: {} },
    tts: { model: 'jifili-1', engine: {}, speakable: null },
    mt: null,
    maxBufferSeconds: 60,
    observer: { bargeIn: quiet, replyLatency: quiet, ended: (reason: string) => void seen.observed.push(reason) },
  } as unknown as CallDeps;
  const carrier: CallCarrier = { media: () => true, mark: () => false, clear: quiet, hangup: (reason) => void seen.hangups.push(reason) };
  const settings: CallSettings = {
    mode,
    relayUrl: null,
    transcriptionLanguage: 'bam',
    ttsLanguage: 'bam',
    welcomeGreeting: null,
    welcomeGreetingInterruptible: true,
    interruptible: 'any',
  };
  const start = { callId: 'CA1', streamId: 'MZ1', customParameters: {}, format: { codec: 'pcmu', sampleRate: 8000 } } as const;
  const call = new CallSession(deps, { callId: 'call_1', accountId: 'acct_1', keyId: 'key_1', carrier: 'twilio' }, start, settings, carrier, start.format, 160);
  const app: CallApp = { interim: quiet, final: quiet, dtmf: quiet, interrupted: quiet, ended: (reason) => void seen.appEnded.push(reason) };
  call.open(app);
  call.signal.addEventListener('abort', () => seen.aborts++);
  return { call, seen };
}

describe('CallSession lifecycle', () => {
  it('ends once, with the first reason, however many closes race', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<CallSettings['mode']>('relay', 'transcription'),
        fc.array(fc.constantFrom(...REASONS), { minLength: 1, maxLength: 8 }),
        async (mode, reasons) => {
          const { call, seen } = openCall(mode);
          await Promise.all(reasons.map((reason) => call.close(reason)));
          await call.close(reasons[0]!);
          const first = reasons[0]!;
          expect(call.closed).toBe(true);
          expect(seen.aborts).toBe(1);
          expect((call.signal.reason as SessionClosedError).reason).toBe(first);
          expect(seen.hangups).toEqual(first === 'caller_hangup' ? [] : [first]);
          expect(seen.appEnded).toEqual([first]);
          expect(seen.observed).toEqual([first]);
          expect(seen.records.map((r) => r.endReason)).toEqual([first]);
          expect(call.summary().endReason).toBe(first);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('is open until closed', () => {
    const { call, seen } = openCall('relay');
    expect(call.closed).toBe(false);
    expect(call.signal.aborted).toBe(false);
    expect(call.summary().endReason).toBe('in_progress');
    expect(seen.records).toEqual([]);
  });
});
