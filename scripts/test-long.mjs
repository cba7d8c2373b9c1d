#!/usr/bin/env node
// `npm run test:long`: the soaks kept out of `npm test` (which stays within about 10 minutes on 2 cores)
// and run by CI after it. Each is a test of the vitest suite run with more repeats than `npm test` gives
// it: test/reliability/nothing-lost.test.ts 100 times per case (10 in `npm test`), and
// test/reliability/kill-points.test.ts with 50 kill points over 300 tasks (3 over 12 in `npm test`), and
// test/reliability/kill-points-worker.test.ts with 10 fleet workers killed over 40 tasks (2 over 8).
// Each one's report goes to test-results/long-<name>.json, beside (not over) the vitest.json `npm test` wrote.
import { spawnSync } from 'node:child_process';
import { basename } from 'node:path';

const LONG = [
  { file: 'test/reliability/nothing-lost.test.ts', env: { BACKCHANNEL_NOTHING_LOST_RUNS: '100' } },
  { file: 'test/reliability/kill-points.test.ts', env: { BACKCHANNEL_KILL_POINTS: '50', BACKCHANNEL_KILL_POINT_TASKS: '300' } },
  {
    file: 'test/reliability/kill-points-worker.test.ts',
    env: { BACKCHANNEL_WORKER_KILL_POINTS: '10', BACKCHANNEL_WORKER_KILL_POINT_TASKS: '40' },
  },
];

let code = 0;
for (const { file, env } of LONG) {
  const report = `test-results/long-${basename(file, '.test.ts')}.json`;
  const result = spawnSync('npx', ['vitest', 'run', file, ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, ...env, BACKCHANNEL_VITEST_JSON: report },
  });
  code ||= result.status ?? 1;
}
process.exitCode = code;
