/**
 * Gives back the memory a peak of connections held, once the peak is over (issue P12 point 10).
 *
 * V8 collects garbage when JavaScript allocates. A server whose sockets have just closed allocates little,
 * so the buffers those sockets held (sample arrays, encoded audio: ArrayBuffers outside V8's heap) stayed
 * allocated: measured, 450–500 MB still held 15 s after 300 speech-socket readers had gone, and the resident
 * size with them. So: every `checkMs` the connection count is sampled; once it has fallen by at least
 * `minDrop` and to half of its highest since the last collection, one full collection runs, and the peak
 * starts again from there. That collection stops the event loop for tens of milliseconds, once per peak.
 *
 * Node offers no `gc()` without the --expose-gc flag; the flag is set at run time and the function taken from
 * a fresh context, the documented way for V8 flags set after start. Where that fails the reducer does nothing.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Logger } from './logger.js';

export interface MemoryReducerOptions {
  /** Open connections now (WebSocket sessions and requests in flight). */
  connections: () => number;
  /** How often the count is sampled; default 1 s. */
  checkMs?: number;
  /** The smallest drop from the peak that is worth a collection; default 100 connections. */
  minDrop?: number;
  logger: Logger;
}

export interface MemoryReducer {
  /** Collections run so far (tests, logs). */
  readonly collections: number;
  close(): void;
}

let cachedGc: (() => void) | null | undefined;

/** V8's full collection, or null where it cannot be had. */
function fullGc(): (() => void) | null {
  if (cachedGc !== undefined) return cachedGc;
  try {
    setFlagsFromString('--expose-gc');
    const gc: unknown = runInNewContext('gc');
    cachedGc = typeof gc === 'function' ? (gc as () => void) : null;
  } catch {
    cachedGc = null;
  }
  return cachedGc;
}

export function startMemoryReducer(options: MemoryReducerOptions): MemoryReducer {
  const { connections, logger } = options;
  const minDrop = options.minDrop ?? 100;
  const gc = fullGc();
  let peak = connections();
  let collections = 0;
  const timer = setInterval(() => {
    const now = connections();
    peak = Math.max(peak, now);
    if (!gc || peak - now < minDrop || now > peak / 2) return;
    const t0 = performance.now();
    const before = process.memoryUsage.rss();
    gc();
    collections++;
    logger.info(
      { connectionsPeak: peak, connections: now, rssBeforeMb: Math.round(before / 2 ** 20), ms: Math.round(performance.now() - t0) },
      'memory: collected after a peak of connections',
    );
    peak = now;
  }, options.checkMs ?? 1_000);
  timer.unref();
  return {
    get collections() {
      return collections;
    },
    close: () => clearInterval(timer),
  };
}
