// The vitest suite of `npm test`, in two projects that scripts/test.mjs runs at the same time:
// `main`, most files, on 2 workers (the machine's 2 cores), and `waiting`, the files that mostly wait
// (for timers, restarts, Redis, sockets) rather than compute, on 2 more. `npx vitest run <file>` finds
// a file's project by itself; a bare `npx vitest run` runs both on one pool of 2 workers, as before.
import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Files whose CPU time (the whole process tree's, measured in a cgroup, each file run alone) was at
 * most 45% of their wall time in the last full run: they leave a core idle while they wait, so they
 * run beside the main project instead of taking one of its 2 workers (docs/performance.md, "Issue 48,
 * round 6: the suite's time"). Figures: seconds of CPU in seconds of the full run's wall time.
 */
export const WAITING = [
  'test/broker/process/spawner-loop.test.ts', // 1.3 s CPU in 21.0 s
  'test/fleet/redis-outage.test.ts', // 4.1 in 22.6
  'test/gateway/chat.test.ts', // 5.4 in 19.5
  'test/fleet/worker-death.test.ts', // 6.7 in 16.6
  'test/gateway/connections.test.ts', // 10.6 in 30.4
  'test/templates/python.test.ts', // 4.6 in 12.8
  'test/fleet/fleet.test.ts', // 15.8 in 39.8
  'test/gateway/hub.test.ts', // 16.0 in 45.8
  'test/reliability/kill-points.test.ts', // 7.2 in 31.8 (alone, load 87)
  'test/reliability/kill-points-worker.test.ts', // 5.2 in 11.1 (alone, load 96)
  'test/cli/schedule.test.ts', // 32.8 in 84.8 (before its polls went from 200 to 500 ms apart)
  'test/cli/hub.test.ts', // 25.2 in 60.7
  'test/cli/worktree.test.ts', // 20.2 in 54.7
  'test/acp-integration/doors.test.ts', // 22.4 in 52.6
];

export default defineConfig({
  test: {
    // A run-private state and config directory: no test reaches the user's own hub or history.
    globalSetup: ['test/global-setup.ts'],
    // Real processes and sockets: give slow CI machines room, but no test relies on sleeps.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 2,
    // The JSON report feeds scripts/test-summary.mjs (the one-line total CI reads); scripts/test.mjs
    // gives each project its own file, and `npm run test:long` (scripts/test-long.mjs) puts its own beside them.
    reporters: ['default', ['json', { outputFile: process.env.BACKCHANNEL_VITEST_JSON ?? 'test-results/vitest.json' }]],
    projects: [
      // `extends: true` adds a project's include to the root's (arrays are merged), so the root has none.
      { extends: true, test: { name: 'main', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...WAITING] } },
      { extends: true, test: { name: 'waiting', include: WAITING } },
    ],
  },
});
