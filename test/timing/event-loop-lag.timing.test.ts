/**
 * The main event loop stays responsive during inference: with 4 concurrent long jobs on the real demo
 * engines (two transcriptions, two syntheses, each in its worker thread), the p99 interval of a 10 ms timer
 * stays under 50 ms. Inference run on the main thread would block it for a whole job (hundreds of ms, see
 * `elapsed`), so the bound separates the two cases with a wide margin; it is not a speed target. (A 20 ms
 * bound — 10 ms of lag over the timer's own 10 ms — failed once in CI at 20.1 ms: on 2 cores with 4 busy
 * model threads, the OS can deschedule the main thread for one time slice.) It runs alone
 * (vitest.timing.config.ts) so other test files do not compete for the two cores.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { EngineRegistry } from '../../src/engines/engine-registry.js';
import { speakDemo } from '../../models/generator/demo-voice.js';

let engines: EngineRegistry;
beforeAll(async () => {
  engines = EngineRegistry.fromManifest('models/kuma-models.json', 'djelia', { intraOpThreads: 1, interOpThreads: 1 });
  await engines.start();
}, 120_000);
afterAll(() => engines.close());

async function drain(iterable: AsyncIterable<unknown>): Promise<void> {
  for await (const _ of iterable) void _;
}

it('the p99 interval of a 10 ms timer stays under 50 ms while 4 long jobs run (blocking would cost a whole job)', async () => {
  const text = 'i ni ce a ka kɛnɛ wa n bɛ taa sugu la ɔ ɲɔ ŋa '.repeat(8).trim();
  // ≈ 4 minutes of demo speech to transcribe: the CTC walk joins window frames and skips no VAD pass now, so
  // a minute took only ≈ 100 ms (not long enough for the percentile to mean anything).
  const audio = speakDemo(Array(4).fill(text).join(' '), 16000).samples;
  const lag = monitorEventLoopDelay({ resolution: 10 });
  lag.enable();
  const t0 = performance.now();
  await Promise.all([
    drain(engines.get('sunjata-1')!.stream('transcribe', { samples: audio })),
    drain(engines.get('djelia-asr-v1')!.stream('transcribe', { samples: audio })),
    drain(engines.get('jifili-1')!.stream('synthesize', { text })),
    drain(engines.get('djelia-tts-v1')!.stream('synthesize', { text })),
  ]);
  const elapsed = performance.now() - t0;
  lag.disable();
  expect(elapsed).toBeGreaterThan(300); // long enough for a percentile to mean something
  expect(lag.percentile(99) / 1e6).toBeLessThan(50);
});
