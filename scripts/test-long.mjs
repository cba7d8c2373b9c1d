#!/usr/bin/env node
// `npm run test:long`: the soaks kept out of `npm test` (which stays within about 10 minutes on 2 cores)
// and run by CI after it. Each is a test of the vitest suite run with more repeats than `npm test` gives
// it: test/reliability/nothing-lost.test.ts 100 times per case (10 in `npm test`), and
// test/reliability/kill-points.test.ts with 50 kill points over 300 tasks (3 over 12 in `npm test`), and
// test/reliability/kill-points-worker.test.ts with 10 fleet workers killed over 40 tasks (2 over 8),
// test/reliability/load.test.ts with 300 tasks at concurrency 50 (100), and the one case of
// test/broker/concurrency.test.ts with 200 tasks through a cap of 20 (60) and of test/fleet/fleet.test.ts
// with 500 tasks over 3 workers (150), each alone (`only`: a test name pattern).
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
  { file: 'test/reliability/load.test.ts', env: { BACKCHANNEL_LOAD_TASKS: '300' } },
  { file: 'test/broker/concurrency.test.ts', env: { BACKCHANNEL_CONCURRENCY_TASKS: '200' }, only: 'tasks at concurrency 20' },
  { file: 'test/fleet/fleet.test.ts', env: { BACKCHANNEL_FLEET_TASKS: '500' }, only: 'tasks over 3 workers' },
];

let code = 0;
for (const { file, env, only } of LONG) {
  const report = `test-results/long-${basename(file, '.test.ts')}.json`;
  const result = spawnSync('npx', ['vitest', 'run', file, ...(only ? ['-t', only] : []), ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, ...env, BACKCHANNEL_VITEST_JSON: report },
  });
  code ||= result.status ?? 1;
}
process.exitCode = code;
