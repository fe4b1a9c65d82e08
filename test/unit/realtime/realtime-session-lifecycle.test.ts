/**
 * A realtime session closes once, whoever closes it and however often: its owner (`close(reason)`, any
 * number of times, any reasons), a revoked key (a fatal end), or a graceful `close` input (an end once its
 * items finish). The first of them decides the reason its signal carries; the VAD is let go once; only an
 * end of its own emits `closed` (once), and nothing is emitted after it is closed.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SessionClosedError } from '../../../src/primitives/session-lifecycle.js';
import { RealtimeSession, type RealtimeCloseReason, type RealtimeSessionDeps } from '../../../src/realtime/realtime-session.js';
import { DEFAULT_SERVER_VAD, type SessionConfig } from '../../../src/realtime/session-config.js';
import type { SessionOutput } from '../../../src/realtime/session-events.js';
import type { VadService } from '../../../src/realtime/vad/contract.js';

const REASONS: RealtimeCloseReason[] = ['client_gone', 'finished', 'insufficient_quota', 'key_revoked', 'server_error'];

type Step = { kind: 'close'; reason: RealtimeCloseReason } | { kind: 'revoke' } | { kind: 'graceful' };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.constantFrom(...REASONS).map((reason): Step => ({ kind: 'close', reason })),
  fc.constant<Step>({ kind: 'revoke' }),
  fc.constant<Step>({ kind: 'graceful' }),
);

/** A VAD service that never scores, and counts how often its channel is let go. */
function countingVad() {
  const counts = { opened: 0, closed: 0 };
  const vad: VadService = {
    open: () => {
      counts.opened++;
      return { push: () => {}, close: () => void counts.closed++ };
    },
    close: async () => {},
  };
  return { vad, counts };
}

const config: SessionConfig = {
  format: { codec: 'pcm16', rate: 24_000 },
  model: null,
  language: null,
  prompt: null,
  target: null,
  turnDetection: DEFAULT_SERVER_VAD,
};

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setImmediate(resolve));
}

describe('RealtimeSession lifecycle', () => {
  it('closes once whatever closes it, how often and with which reasons', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
        const { vad, counts } = countingVad();
        const deps = {
          ledger: null,
          charge: { requestId: 'req_1', accountId: 'acct_1', keyId: 'key_1' },
          vad,
          translator: null,
          maxBufferSeconds: 60,
        } as unknown as RealtimeSessionDeps;
        const outputs: SessionOutput[] = [];
        let emittedAfterClose = 0;
        const session = new RealtimeSession(deps, config, (output) => {
          if (session.closed && output.type !== 'closed') emittedAfterClose++;
          outputs.push(output);
        });
        let aborts = 0;
        session.signal.addEventListener('abort', () => aborts++);
        session.start();
        await until(() => counts.opened === 1);

        for (const s of steps) {
          if (s.kind === 'close') session.close(s.reason);
          else if (s.kind === 'revoke') session.revoke();
          else session.input({ kind: 'close' });
        }
        await until(() => session.closed);

        // The first owner close or revocation decides; with neither, the graceful close ends it once its (no) items finish.
        const decisive = steps.find((s) => s.kind !== 'graceful');
        const expected: RealtimeCloseReason = decisive === undefined ? 'finished' : decisive.kind === 'revoke' ? 'key_revoked' : decisive.reason;
        expect(aborts).toBe(1);
        expect(session.signal.reason).toBeInstanceOf(SessionClosedError);
        expect((session.signal.reason as SessionClosedError).reason).toBe(expected);
        expect(counts.closed).toBe(1);
        expect(emittedAfterClose).toBe(0);
        // Only a session that ended on its own says so; an owner's close emits nothing.
        expect(outputs.filter((o) => o.type === 'closed').length).toBe(decisive?.kind === 'close' ? 0 : 1);
        expect(outputs.filter((o) => o.type === 'fatal').length).toBe(decisive?.kind === 'revoke' ? 1 : 0);
      }),
      { numRuns: 60 },
    );
  });

  it('takes no input once closed', async () => {
    const { vad, counts } = countingVad();
    const deps = {
      ledger: null,
      charge: { requestId: 'req_1', accountId: 'acct_1', keyId: 'key_1' },
      vad,
      translator: null,
      maxBufferSeconds: 60,
    } as unknown as RealtimeSessionDeps;
    const outputs: SessionOutput[] = [];
    const session = new RealtimeSession(deps, config, (output) => outputs.push(output));
    session.start();
    await until(() => counts.opened === 1);
    session.close('client_gone');
    session.input({ kind: 'clear' });
    session.input({ kind: 'commit' });
    session.input({ kind: 'close' });
    expect(session.closed).toBe(true);
    expect(outputs).toEqual([]);
  });
});
