#!/usr/bin/env node
// `npm test`: the unit/integration suite (vitest: real processes and sockets) and, beside it, the
// browser suite (Playwright driving a Chromium found or installed by scripts/find-chromium.mjs), then
// the Python SDK's suite (pytest in .venv-test/, made on first use), then one summary line per runner
// and a total. Every suite always runs, so one failure does not hide the others' results. Without a
// Chromium the browser suite counts as failed, never as passed or skipped.
// The browser suite mostly waits (for pages, serve and its sub-agents), so it runs at the same time as
// vitest rather than after it; its output goes to test-results/playwright.log and is printed whole once
// it is done, so the two never interleave. BACKCHANNEL_TEST_SERIAL=1 runs them one after the other.
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureChromium } from './find-chromium.mjs';

for (const report of ['vitest.json', 'playwright.json', 'playwright.log', 'pytest.xml', 'timings.json', 'slowest.txt'])
  rmSync(join('test-results', report), { force: true });

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

/**
 * Starts a runner with its output written straight to `logFile` (a file, not a pipe: this process
 * blocks in spawnSync while vitest runs and could not drain one). Resolves with its exit code.
 */
function runLogged(command, args, logFile, env = {}) {
  const log = openSync(logFile, 'w');
  const child = spawn(command, args, { stdio: ['ignore', log, log], env: { ...process.env, ...env } });
  closeSync(log);
  return new Promise((resolve) => {
    child.on('error', (error) => {
      writeFileSync(logFile, `${command} could not start: ${error.message}\n`, { flag: 'a' });
      resolve(1);
    });
    child.on('close', (code) => resolve(code ?? 1));
  });
}

rmSync('test-results/chromium-missing', { force: true });
mkdirSync('test-results', { recursive: true });

const serial = process.env.BACKCHANNEL_TEST_SERIAL === '1';
const chromium = ensureChromium();
const PLAYWRIGHT_LOG = 'test-results/playwright.log';
/** The browser suite: started now (beside vitest), or after vitest with BACKCHANNEL_TEST_SERIAL=1. */
function browserSuite() {
  if (!chromium) {
    writeFileSync('test-results/chromium-missing', 'no Chromium could be found or installed (see above)\n');
    return Promise.resolve(1);
  }
  const args = ['playwright', 'test', '--reporter=list,json'];
  const env = { PLAYWRIGHT_JSON_OUTPUT_NAME: 'test-results/playwright.json', CHROMIUM_PATH: chromium };
  return serial ? Promise.resolve(run('npx', args, env)) : runLogged('npx', args, PLAYWRIGHT_LOG, env);
}
/** Each runner's wall time in seconds, for the summary (test-results/timings.json). */
const seconds = {};
const since = (start) => Math.round((Date.now() - start) / 1000);
function timedBrowserSuite() {
  const start = Date.now();
  return browserSuite().then((code) => ((seconds.playwright = since(start)), code));
}
const browser = serial ? undefined : timedBrowserSuite();
if (browser) console.log(`The browser suite (Playwright) runs beside vitest; its output follows vitest's (${PLAYWRIGHT_LOG}).`);
const vitestStart = Date.now();
const vitest = run('npx', ['vitest', 'run', ...process.argv.slice(2)]);
seconds.vitest = since(vitestStart);
const playwrightSerial = serial ? await timedBrowserSuite() : undefined;
let pytest = 1;
const pytestStart = Date.now();
if (ensurePytestVenv()) pytest = run(venvPython, ['-m', 'pytest', 'sdk/python/tests', '-q', '--junitxml=test-results/pytest.xml']);
else console.log(`No Python test environment: ${systemPython} -m venv or pip failed (see above); the Python SDK tests did not run.`);
if (browser) console.log('\nWaiting for the browser suite (Playwright), which ran beside vitest…');
const playwright = playwrightSerial ?? (await browser);
if (browser && existsSync(PLAYWRIGHT_LOG)) process.stdout.write(readFileSync(PLAYWRIGHT_LOG));
seconds.pytest = since(pytestStart);
writeFileSync('test-results/timings.json', JSON.stringify(seconds) + '\n');
const summary = run(process.execPath, ['scripts/test-summary.mjs']);
process.exitCode = vitest || playwright || pytest || summary;
