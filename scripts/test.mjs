#!/usr/bin/env node
// `npm test`: the unit/integration suite (vitest: real processes and sockets), then the browser suite
// (Playwright driving Debian's Chromium), then one summary line per runner and a total.
// Both suites always run, so one failure does not hide the other's results.
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';

rmSync('test-results/vitest.json', { force: true });
rmSync('test-results/playwright.json', { force: true });

function run(command, args, env = {}) {
  const result = spawnSync(command, args, { stdio: 'inherit', env: { ...process.env, ...env } });
  return result.status ?? 1;
}

const vitest = run('npx', ['vitest', 'run', ...process.argv.slice(2)]);
const playwright = run('npx', ['playwright', 'test', '--reporter=list,json'], {
  PLAYWRIGHT_JSON_OUTPUT_NAME: 'test-results/playwright.json',
});
const summary = run(process.execPath, ['scripts/test-summary.mjs']);
process.exitCode = vitest || playwright || summary;
