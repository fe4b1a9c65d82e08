/**
 * closeWhenDone: the reservation behind a streamed response is closed exactly once on every path — the
 * stream finishes, fails, is abandoned by its consumer, or is never consumed because the client left first
 * — and as soon as the consumer stops, without waiting for the source's own (possibly slow) cleanup.
 */
import { describe, expect, it } from 'vitest';
import { closeWhenDone } from '../../../src/api/compat/reserved-stream.js';

function tracked(items: number[], options: { failAfter?: number; slowCleanup?: Promise<void> } = {}) {
  const log: string[] = [];
  async function* source() {
    try {
      for (const [i, item] of items.entries()) {
        if (options.failAfter === i) throw new Error('source failed');
        yield item;
      }
    } finally {
      log.push('source cleanup started');
      await options.slowCleanup;
      log.push('source cleanup done');
    }
  }
  const onEnd = async () => void log.push('closed');
  return { log, source: source(), onEnd };
}

describe('closeWhenDone', () => {
  it('a stream that finishes closes once, after its last item', async () => {
    const { log, source, onEnd } = tracked([1, 2, 3]);
    const out: number[] = [];
    for await (const x of closeWhenDone(source, onEnd, new AbortController().signal)) out.push(x);
    expect(out).toEqual([1, 2, 3]);
    expect(log.filter((l) => l === 'closed')).toHaveLength(1);
  });

  it('a stream that fails closes once and the error goes on', async () => {
    const { log, source, onEnd } = tracked([1, 2, 3], { failAfter: 1 });
    const run = async () => {
      for await (const _ of closeWhenDone(source, onEnd, new AbortController().signal));
    };
    await expect(run()).rejects.toThrow('source failed');
    expect(log.filter((l) => l === 'closed')).toHaveLength(1);
  });

  it('a consumer that leaves closes it before the source has finished cleaning up', async () => {
    let finishCleanup!: () => void;
    const slowCleanup = new Promise<void>((resolve) => (finishCleanup = resolve));
    const { log, source, onEnd } = tracked([1, 2, 3], { slowCleanup });
    const stream = closeWhenDone(source, onEnd, new AbortController().signal);
    await stream.next();
    const leaving = stream.return(undefined);
    await new Promise((r) => setImmediate(r));
    expect(log).toEqual(['closed', 'source cleanup started']);
    finishCleanup();
    await leaving;
    expect(log).toEqual(['closed', 'source cleanup started', 'source cleanup done']);
  });

  it('a stream never consumed is closed when the client leaves, and yields nothing if pulled after', async () => {
    const { log, source, onEnd } = tracked([1]);
    const controller = new AbortController();
    const stream = closeWhenDone(source, onEnd, controller.signal);
    controller.abort();
    await new Promise((r) => setImmediate(r));
    expect(log.filter((l) => l === 'closed')).toHaveLength(1);
    expect(await stream.next()).toEqual({ done: true, value: undefined });
    expect(log.filter((l) => l === 'closed')).toHaveLength(1);
  });

  it('a signal already aborted when the stream is made closes it at once', async () => {
    const { log, source, onEnd } = tracked([1]);
    const controller = new AbortController();
    controller.abort();
    closeWhenDone(source, onEnd, controller.signal);
    await new Promise((r) => setImmediate(r));
    expect(log).toContain('closed');
  });

  it('an abort during a running stream leaves closing to the stream, once', async () => {
    const { log, source, onEnd } = tracked([1, 2]);
    const controller = new AbortController();
    const stream = closeWhenDone(source, onEnd, controller.signal);
    await stream.next();
    controller.abort();
    await stream.return(undefined);
    expect(log.filter((l) => l === 'closed')).toHaveLength(1);
  });

  it('a failing onEnd never becomes an unhandled rejection', async () => {
    const controller = new AbortController();
    async function* empty() {}
    closeWhenDone(empty(), () => Promise.reject(new Error('store down')), controller.signal);
    controller.abort();
    await new Promise((r) => setImmediate(r)); // vitest fails the run on an unhandled rejection
  });
});
