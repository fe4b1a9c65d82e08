import { defineConfig } from 'vitest/config';

// Tests that measure timing behaviour (event-loop lag): run after the main suite, one file at a time, so
// no other test competes for the cores while they measure.
export default defineConfig({
  test: {
    include: ['test/timing/**/*.timing.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    fileParallelism: false,
  },
});
