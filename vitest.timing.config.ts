import { defineConfig } from 'vitest/config';

// Tests that measure timing behaviour (event-loop lag), and the browser tests, whose fake microphone plays in
// real time (a starved Chromium or server splits a spoken turn), and the multi-process tests: run after the main suite, one file at a
// time, so no other test competes for the cores.
export default defineConfig({
  test: {
    include: ['test/timing/**/*.timing.test.ts', 'test/browser/**/*.test.ts', 'test/cluster/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    expect: { poll: { timeout: 10_000 } },
    fileParallelism: false,
  },
});
