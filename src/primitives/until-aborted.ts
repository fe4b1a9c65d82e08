/**
 * A wait that an abort ends early: a producer waiting for room (a queue's drained(), a paced stream's
 * drain) must also wake when its session stops, and must not leave a listener on the signal per wait
 * (a long session waits thousands of times on one signal).
 */

/** Resolves when `promise` does or `signal` aborts, whichever comes first. */
export function untilAborted(promise: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      signal.removeEventListener('abort', done);
      resolve();
    };
    signal.addEventListener('abort', done, { once: true });
    void promise.then(done);
  });
}
