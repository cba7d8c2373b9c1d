#!/usr/bin/env node
// First step of `npm start` and `npm test`: on a fresh clone, or after a pull that changed
// package-lock.json, install (`npm ci`, which also builds through the `prepare` script) and say so in
// one line; otherwise return at once. Node built-ins only: it runs before anything is installed.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
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

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) ensureInstalled(fileURLToPath(new URL('..', import.meta.url)));
