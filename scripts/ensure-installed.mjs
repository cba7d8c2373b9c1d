#!/usr/bin/env node
// First step of `npm start` and `npm test`: on a fresh clone, or after a pull that changed
// package-lock.json, install (`npm ci`, which also builds through the `prepare` script) and say so in
// one line; otherwise return at once. With --tests (`npm test`), also the system programs the tests
// need (TEST_TOOLS): installed with apt-get as root on Debian/Ubuntu, else named in one line each.
// (Chromium is the browser suite's own step: scripts/find-chromium.mjs, run by scripts/test.mjs.)
// Node built-ins only: it runs before anything is installed.
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * What node_modules needs, read from package-lock.json and the copy npm keeps of what it installed
 * (node_modules/.package-lock.json): `missing` (nothing installed), `stale` (a package of the lock
 * is absent or at another version; optional ones may be absent, as npm skips other platforms'), or
 * `ok`. `reason` says which, in words.
 * @param {string} root the project directory
 * @returns {{ state: 'missing' | 'stale' | 'ok', reason: string }}
 */
export function installState(root) {
  const lockFile = join(root, 'package-lock.json');
  const installedFile = join(root, 'node_modules', '.package-lock.json');
  if (!existsSync(installedFile)) return { state: 'missing', reason: 'node_modules is not installed' };
  if (!existsSync(lockFile)) return { state: 'ok', reason: 'no package-lock.json to compare with' };
  let wanted, installed;
  try {
    wanted = JSON.parse(readFileSync(lockFile, 'utf8')).packages ?? {};
    installed = JSON.parse(readFileSync(installedFile, 'utf8')).packages ?? {};
  } catch (error) {
    return { state: 'stale', reason: `cannot read the lock files (${error.message})` };
  }
  for (const [where, entry] of Object.entries(wanted)) {
    if (where === '' || entry.link) continue;
    const have = installed[where];
    if (!have) {
      if (entry.optional) continue;
      return { state: 'stale', reason: `${where} is in package-lock.json but not installed` };
    }
    if (have.version !== entry.version)
      return { state: 'stale', reason: `${where} is ${have.version}, package-lock.json wants ${entry.version}` };
    if (!entry.optional && !existsSync(join(root, where, 'package.json')))
      return { state: 'stale', reason: `${where} was removed from node_modules` };
  }
  return { state: 'ok', reason: 'node_modules matches package-lock.json' };
}

function npm(args, env = {}) {
  const command = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  return spawnSync(command, args, { stdio: 'inherit', env: { ...process.env, ...env }, shell: process.platform === 'win32' }).status ?? 1;
}

/**
 * Installs and builds when `installState` says so; returns at once otherwise. Exits the process
 * with npm's code when the install fails.
 * @param {string} root the project directory
 */
export function ensureInstalled(root) {
  const { state, reason } = installState(root);
  if (state === 'ok') return;
  console.log(`${reason}: installing with \`npm ci\` and building first (once)…`);
  const args = ['ci', '--no-audit', '--no-fund', '--loglevel=error', '--prefix', root];
  let code = npm(args);
  // Electron's package downloads its binary from outside the npm registry; where that fails, install
  // without it (the panel then runs headless in a browser; `npx install-electron` adds it later).
  if (code !== 0 && !process.env.ELECTRON_SKIP_BINARY_DOWNLOAD) {
    console.log('npm ci failed; trying again without the Electron binary (ELECTRON_SKIP_BINARY_DOWNLOAD=1)…');
    code = npm(args, { ELECTRON_SKIP_BINARY_DOWNLOAD: '1' });
  }
  if (code === 0 && !existsSync(join(root, 'dist', 'cli', 'main.js'))) code = npm(['run', 'build', '--prefix', root]);
  if (code !== 0) process.exit(code);
}

/** Whether `name` is an executable file in one of PATH's directories. */
function onPath(name, env) {
  return (env.PATH ?? '').split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, name), constants.X_OK);
      return Boolean(dir);
    } catch {
      return false;
    }
  });
}

/**
 * The system programs `npm test` needs beside node_modules and Chromium, each with the Debian package
 * that provides it and what goes without it. `present(env)` looks for it with that environment's PATH.
 */
export const TEST_TOOLS = [
  {
    tool: 'redis-server',
    package: 'redis-server',
    without: 'the Redis fleet tests (test/fleet) are skipped',
    present: (env) => onPath('redis-server', env),
  },
  {
    tool: 'jq',
    package: 'jq',
    without: 'the strict-JSON check of `tasks --json` and GET /api/tasks (test/cli/json-output.test.ts) is skipped',
    present: (env) => onPath('jq', env),
  },
  {
    tool: 'python3 with venv and ensurepip',
    package: 'python3-venv',
    without: "the Python SDK's tests cannot make .venv-test/ and fail",
    present: (env) =>
      onPath('python3', env) && spawnSync('python3', ['-c', 'import venv, ensurepip'], { env, stdio: 'ignore' }).status === 0,
  },
];

/**
 * What to do about the test tools missing from `env`'s PATH: `install` (the Debian packages, when
 * this is root on Debian/Ubuntu with apt-get) or `tell` (one line per missing tool, naming its
 * package); both empty when nothing is missing.
 * @param {{ env?: NodeJS.ProcessEnv, isRoot?: boolean, debian?: boolean }} [where]
 * @returns {{ install: string[], tell: string[] }}
 */
export function testToolsPlan({ env = process.env, isRoot = process.getuid?.() === 0, debian = existsSync('/etc/debian_version') } = {}) {
  const missing = TEST_TOOLS.filter((t) => !t.present(env));
  if (missing.length === 0) return { install: [], tell: [] };
  if (isRoot && debian && onPath('apt-get', env)) return { install: missing.map((t) => t.package), tell: [] };
  return {
    install: [],
    tell: missing.map((t) => `npm test: ${t.tool} is missing, so ${t.without}: install it with \`sudo apt-get install ${t.package}\``),
  };
}

/**
 * `apt-get update` then `apt-get install` of `packages`, quietly and without Recommends: Debian's
 * chromium alone would otherwise bring 135 packages (avahi, samba-libs, cups helpers) and upgrade
 * systemd and perl. Returns apt-get's exit code.
 * @param {string[]} packages
 */
export function aptInstall(packages) {
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  return spawnSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...packages], { stdio: 'inherit', env }).status ?? 1;
}

/** Installs (or names) the missing test tools; never stops the tests, whose summary counts what could not run. */
export function ensureTestTools(log = (line) => console.log(line)) {
  const { install, tell } = testToolsPlan();
  for (const line of tell) log(line);
  if (install.length === 0) return;
  log(`npm test needs ${install.join(', ')}: installing with apt-get (once)…`);
  aptInstall(install);
  for (const t of TEST_TOOLS.filter((t) => !t.present(process.env)))
    log(`npm test: apt-get could not install ${t.package}, so ${t.without}`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  ensureInstalled(fileURLToPath(new URL('..', import.meta.url)));
  if (process.argv.includes('--tests')) ensureTestTools();
}
