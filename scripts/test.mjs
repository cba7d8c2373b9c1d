#!/usr/bin/env node
// `npm test`: the unit/integration suite (vitest: real processes and sockets), the browser suite
// (Playwright driving a Chromium found or installed by scripts/find-chromium.mjs) and the Python SDK's
// suite (pytest in .venv-test/, made on first use), then one summary line per runner, with its time,
// and a total. Every suite always runs, so one failure does not hide the others' results. Without a
// Chromium the browser suite counts as failed, never as passed or skipped.
// Three lanes run at once, since much of the suite waits rather than computes: vitest's `main` project
// (its output shown live), vitest's `waiting` project (the files that mostly wait, vitest.config.ts),
// and the browser suite followed by pytest. The last two write to test-results/*.log, printed whole once
// vitest's main project is done, so no two runners' output interleave. BACKCHANNEL_TEST_SERIAL=1 runs
// them one after the other instead (vitest's two projects then share its 2 workers).
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureChromium } from './find-chromium.mjs';

const REPORTS = [
  'vitest.json',
  'vitest-waiting.json',
  'vitest-waiting.log',
  'playwright.json',
  'playwright.log',
  'pytest.xml',
  'pytest.log',
];
for (const report of [...REPORTS, 'timings.json', 'slowest.txt']) rmSync(join('test-results', report), { force: true });

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

/** Runs a command with the terminal as its output; resolves with its exit code (the event loop keeps turning). */
function runLive(command, args, env = {}) {
  const child = spawn(command, args, { stdio: 'inherit', env: { ...process.env, ...env } });
  return new Promise((resolve) => {
    child.on('error', (error) => {
      console.log(`${command} could not start: ${error.message}`);
      resolve(1);
    });
    child.on('close', (code) => resolve(code ?? 1));
  });
}

/**
 * Starts a runner with its output written straight to `logFile` (a file, not a pipe: nothing is held
 * in this process, which may be blocked setting up pytest's venv). Resolves with its exit code.
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
const started = Date.now();
/** Each runner's wall time in seconds, for the summary (test-results/timings.json). */
const seconds = {};
/** Runs `step` (a promise of an exit code) and records its wall time under `name`. */
async function timed(name, step) {
  const start = Date.now();
  const code = await step();
  seconds[name] = Math.round((Date.now() - start) / 1000);
  return code;
}
/** A runner whose output goes to the terminal at once (serial), or to `log` to be printed later. */
const runner = (log, command, args, env = {}) => (serial ? runLive(command, args, env) : runLogged(command, args, log, env));

/** The browser suite; without a Chromium it fails, saying so in the summary. */
function browserSuite() {
  if (!chromium) {
    writeFileSync('test-results/chromium-missing', 'no Chromium could be found or installed (see above)\n');
    return Promise.resolve(1);
  }
  const env = { PLAYWRIGHT_JSON_OUTPUT_NAME: 'test-results/playwright.json', CHROMIUM_PATH: chromium };
  return runner('test-results/playwright.log', 'npx', ['playwright', 'test', '--reporter=list,json'], env);
}
function pythonSuite() {
  if (ensurePytestVenv())
    return runner('test-results/pytest.log', venvPython, ['-m', 'pytest', 'sdk/python/tests', '-q', '--junitxml=test-results/pytest.xml']);
  console.log(`No Python test environment: ${systemPython} -m venv or pip failed (see above); the Python SDK tests did not run.`);
  return Promise.resolve(1);
}
const extra = process.argv.slice(2);
/** vitest's two projects (vitest.config.ts), each with its own JSON report; `--passWithNoTests` for file filters that match one only. */
const vitestMain = () => runLive('npx', ['vitest', 'run', '--project', 'main', '--passWithNoTests', ...extra]);
const vitestWaiting = () =>
  runner('test-results/vitest-waiting.log', 'npx', ['vitest', 'run', '--project', 'waiting', '--passWithNoTests', ...extra], {
    BACKCHANNEL_VITEST_JSON: 'test-results/vitest-waiting.json',
  });

let codes;
if (serial) {
  const vitest = await timed('vitest', () => runLive('npx', ['vitest', 'run', ...extra]));
  const playwright = await timed('playwright', browserSuite);
  const pytest = await timed('pytest', pythonSuite);
  codes = [vitest, playwright, pytest];
} else {
  console.log("vitest's waiting project, then the browser suite (Playwright) and pytest, run beside vitest; their output follows.");
  const waiting = timed('vitest-waiting', vitestWaiting);
  const playwright = timed('playwright', browserSuite);
  const pytest = playwright.then(() => timed('pytest', pythonSuite));
  const main = await timed('vitest-main', vitestMain);
  for (const [done, log, what] of [
    [waiting, 'test-results/vitest-waiting.log', "vitest's waiting project"],
    [playwright, 'test-results/playwright.log', 'the browser suite (Playwright)'],
    [pytest, 'test-results/pytest.log', 'pytest'],
  ]) {
    console.log(`\nWaiting for ${what}, which ran beside vitest…`);
    const code = await done;
    if (existsSync(log)) process.stdout.write(readFileSync(log));
    else console.log(`(${what}: no output, exit code ${code})`);
  }
  seconds.vitest = Math.max(seconds['vitest-main'], seconds['vitest-waiting']);
  codes = [main || (await waiting), await playwright, await pytest];
}
seconds.all = Math.round((Date.now() - started) / 1000);
writeFileSync('test-results/timings.json', JSON.stringify(seconds) + '\n');
const summary = await runLive(process.execPath, ['scripts/test-summary.mjs']);
process.exitCode = codes.find((code) => code !== 0) ?? summary;
