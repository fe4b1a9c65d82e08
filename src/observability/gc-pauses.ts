/**
 * V8's memory reducer: when the process looks idle, it shrinks the heap with compacting full collections. A
 * real-time server looks idle between the 20 ms frames of a lone phone call, and those collections stopped the
 * main thread — which paces every call's outbound frames — for 10–37 ms (`--trace-gc` under
 * `npm run bench:telephony -- --bridge fr-FR --pack real-size --calls 1`, KUMA_BENCH_NODE_FLAGS): a frame
 * sent more than 20 ms late. Kuma gives memory back itself, once, after a peak of connections
 * (memory-reducer.ts), so V8's reducer is turned off: `npm start` runs node with `--no-memory-reducer` (V8 reads
 * it when it sets up a heap, so only a command-line flag reaches the main thread's), and this call turns it off
 * for the worker threads' heaps, created later, however the server was started.
 */
import { setFlagsFromString } from 'node:v8';

let done = false;

export function avoidIdleCompaction(): void {
  if (done) return;
  done = true;
  setFlagsFromString('--no-memory-reducer');
}
