#!/usr/bin/env node
// `npm test`: the unit/integration suite (vitest: real processes and sockets), then the browser suite
// (Playwright driving Debian's Chromium), then the Python SDK's suite (pytest in .venv-test/, made on
// first use), then one summary line per runner and a total.
// Every suite always runs, so one failure does not hide the others' results.
import { spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';

for (const report of ['vitest.json', 'playwright.json', 'pytest.xml']) rmSync(join('test-results', report), { force: true });

function run(command, args, env = {}) {
  const result = spawnSync(command, args, { stdio: 'inherit', env: { ...process.env, ...env } });
  return result.status ?? 1;
}

const VENV = '.venv-test';
const venvPython = join(VENV, process.platform === 'win32' ? 'Scripts/python.exe' : 'bin/python');
const systemPython = process.platform === 'win32' ? 'python' : 'python3';
const quiet = (command, args) => spawnSync(command, args, { stdio: 'ignore' }).status === 0;

/**
 * A project-local venv with pytest (and mypy, which the suite uses when present), from the package
 * registry; where that cannot be reached, a venv that sees the system's own pytest. Returns false
 * after saying why there is none.
 */
function ensurePytestVenv() {
  if (existsSync(venvPython) && quiet(venvPython, ['-c', 'import pytest'])) return true;
  console.log(`Setting up ${VENV}/ for the Python SDK tests (venv + pip install pytest mypy)…`);
  rmSync(VENV, { recursive: true, force: true });
  if (run(systemPython, ['-m', 'venv', VENV]) !== 0) return false;
  if (run(venvPython, ['-m', 'pip', 'install', '--quiet', 'pytest']) === 0) {
    if (run(venvPython, ['-m', 'pip', 'install', '--quiet', 'mypy', 'wheel']) !== 0)
      console.log('(mypy not installed: its check is skipped)');
    return true;
  }
  console.log(`pip could not install pytest; trying a ${VENV}/ that uses the system's pytest`);
  rmSync(VENV, { recursive: true, force: true });
  return run(systemPython, ['-m', 'venv', '--system-site-packages', VENV]) === 0 && quiet(venvPython, ['-c', 'import pytest']);
}

const vitest = run('npx', ['vitest', 'run', ...process.argv.slice(2)]);
const playwright = run('npx', ['playwright', 'test', '--reporter=list,json'], {
  PLAYWRIGHT_JSON_OUTPUT_NAME: 'test-results/playwright.json',
});
let pytest = 1;
if (ensurePytestVenv()) pytest = run(venvPython, ['-m', 'pytest', 'sdk/python/tests', '-q', '--junitxml=test-results/pytest.xml']);
else console.log(`No Python test environment: ${systemPython} -m venv or pip failed (see above); the Python SDK tests did not run.`);
const summary = run(process.execPath, ['scripts/test-summary.mjs']);
process.exitCode = vitest || playwright || pytest || summary;
