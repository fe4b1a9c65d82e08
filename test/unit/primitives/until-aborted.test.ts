/** untilAborted: a wait that ends with its promise or the abort, whichever is first, and leaves no listener. */
import { describe, expect, it } from 'vitest';
import { untilAborted } from '../../../src/primitives/until-aborted.js';

/** A signal that counts its abort listeners. */
function countedSignal() {
  const controller = new AbortController();
  let listeners = 0;
  const add = controller.signal.addEventListener.bind(controller.signal);
  const remove = controller.signal.removeEventListener.bind(controller.signal);
  controller.signal.addEventListener = ((...args: Parameters<typeof add>) => (listeners++, add(...args))) as typeof add;
  controller.signal.removeEventListener = ((...args: Parameters<typeof remove>) => (listeners--, remove(...args))) as typeof remove;
  return { controller, listeners: () => listeners };
}

describe('untilAborted', () => {
  it('resolves with the promise and removes its listener, however many waits', async () => {
    const { controller, listeners } = countedSignal();
    for (let i = 0; i < 100; i++) await untilAborted(Promise.resolve(), controller.signal);
    expect(listeners()).toBe(0);
  });

  it('resolves on the abort while the promise still waits', async () => {
    const { controller, listeners } = countedSignal();
    const wait = untilAborted(new Promise<void>(() => {}), controller.signal);
    controller.abort();
    await wait;
    expect(listeners()).toBe(0);
  });

  it('resolves at once on a signal already aborted', async () => {
    await untilAborted(new Promise<void>(() => {}), AbortSignal.abort());
  });
});
