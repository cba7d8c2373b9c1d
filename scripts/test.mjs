#!/usr/bin/env node
// `npm test`: the unit/integration suite (vitest: real processes and sockets), then the browser suite
// (Playwright driving a Chromium found or installed by scripts/find-chromium.mjs), then the Python
// SDK's suite (pytest in .venv-test/, made on first use), then one summary line per runner and a total.
// Every suite always runs, so one failure does not hide the others' results. Without a Chromium the
// browser suite counts as failed, never as passed or skipped.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureChromium } from './find-chromium.mjs';

for (const report of ['vitest.json', 'playwright.json', 'pytest.xml']) rmSync(join('test-results', report), { force: true });

function run(command, args, env = {}) {
  const result = spawnSync(command, args, { stdio: 'inherit', env: { ...process.env, ...env } });
  return result.status ?? 1;
}

const VENV = '.venv-test';
const venvPython = join(VENV, process.platform === 'win32' ? 'Scripts/python.exe' : 'bin/python');
const systemPython = process.platform === 'win32' ? 'python' : 'python3';
const quiet = (command, args) => spawnSync(command, args, { stdio: 'ignore' }).status === 0;

/** pip that fails fast where the package index cannot be reached (its default is 5 retries × 180 s). */
const pipInstall = (...names) => run(venvPython, ['-m', 'pip', 'install', '--quiet', '--retries', '0', '--timeout', '10', ...names]);

/**
 * A project-local venv for the Python SDK's suite: one that sees the system's pytest when it has one
 * (no download), else one with pytest from the package index; mypy, which the suite uses when present,
 * is added when the index can be reached. Returns false after saying why there is none.
 */
function ensurePytestVenv() {
  if (existsSync(venvPython) && quiet(venvPython, ['-c', 'import pytest'])) return true;
  rmSync(VENV, { recursive: true, force: true });
  const systemHasPytest = quiet(systemPython, ['-c', 'import pytest']);
  console.log(`Setting up ${VENV}/ for the Python SDK tests (${systemHasPytest ? "with the system's pytest" : 'pip install pytest'})…`);
  if (run(systemPython, ['-m', 'venv', ...(systemHasPytest ? ['--system-site-packages'] : []), VENV]) !== 0) return false;
  if (!systemHasPytest && pipInstall('pytest') !== 0) return false;
  if (!quiet(venvPython, ['-c', 'import mypy']) && pipInstall('mypy') !== 0)
    console.log('(mypy could not be installed: its check is skipped)');
  return true;
}

rmSync('test-results/chromium-missing', { force: true });

const vitest = run('npx', ['vitest', 'run', ...process.argv.slice(2)]);
const chromium = ensureChromium();
let playwright = 1;
if (chromium) {
  playwright = run('npx', ['playwright', 'test', '--reporter=list,json'], {
    PLAYWRIGHT_JSON_OUTPUT_NAME: 'test-results/playwright.json',
    CHROMIUM_PATH: chromium,
  });
} else {
  mkdirSync('test-results', { recursive: true });
  writeFileSync('test-results/chromium-missing', 'no Chromium could be found or installed (see above)\n');
}
let pytest = 1;
if (ensurePytestVenv()) pytest = run(venvPython, ['-m', 'pytest', 'sdk/python/tests', '-q', '--junitxml=test-results/pytest.xml']);
else console.log(`No Python test environment: ${systemPython} -m venv or pip failed (see above); the Python SDK tests did not run.`);
const summary = run(process.execPath, ['scripts/test-summary.mjs']);
process.exitCode = vitest || playwright || pytest || summary;
