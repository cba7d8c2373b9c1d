import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // A run-private state and config directory: no test reaches the user's own hub or history.
    globalSetup: ['test/global-setup.ts'],
    // Real processes and sockets: give slow CI machines room, but no test relies on sleeps.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 2,
    // The JSON report feeds scripts/test-summary.mjs (the one-line total CI reads); `npm run test:long`
    // (scripts/test-long.mjs) puts its own beside it.
    reporters: ['default', ['json', { outputFile: process.env.BACKCHANNEL_VITEST_JSON ?? 'test-results/vitest.json' }]],
  },
});
