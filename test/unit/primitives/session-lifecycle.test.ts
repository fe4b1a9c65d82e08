import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { SessionClosedError, SessionLifecycle } from '../../../src/primitives/session-lifecycle.js';

describe('SessionLifecycle', () => {
  it('closes once: the first reason wins, the signal fires once with it, later closes answer false', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ minLength: 1 }), { minLength: 1, maxLength: 20 }), (reasons) => {
        const life = new SessionLifecycle();
        let aborts = 0;
        life.signal.addEventListener('abort', () => aborts++);
        const answers = reasons.map((reason) => life.close(reason));
        expect(answers).toEqual(reasons.map((_, i) => i === 0));
        expect(aborts).toBe(1);
        expect(life.closed).toBe(true);
        expect(life.reason).toBe(reasons[0]);
        expect(life.signal.reason).toBeInstanceOf(SessionClosedError);
        expect((life.signal.reason as SessionClosedError).reason).toBe(reasons[0]);
        expect(() => life.throwIfClosed()).toThrow(SessionClosedError);
      }),
    );
  });

  it('is open until closed', () => {
    const life = new SessionLifecycle<'done'>();
    expect(life.closed).toBe(false);
    expect(life.reason).toBeUndefined();
    expect(life.signal.aborted).toBe(false);
    expect(() => life.throwIfClosed()).not.toThrow();
  });
});
