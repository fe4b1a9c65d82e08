import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The timing, browser and multi-process tests run alone afterwards (vitest.timing.config.ts); here they would share the cores.
    exclude: ['test/timing/**', 'test/browser/**', 'test/cluster/**', '**/node_modules/**'],
    // Generates the demo model pack once (skipped when it is current).
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Several polls wait for something another process or socket does (a child exiting, a hold released),
    // which this suite's own load on two cores can delay past vitest's default 1 s; a poll that holds
    // returns at once, so the longer wait costs nothing when the test passes.
    expect: { poll: { timeout: 10_000 } },
    // Integration tests start real servers on ephemeral ports; two cores, so keep parallelism modest.
    pool: 'forks',
    maxWorkers: 2,
  },
});
