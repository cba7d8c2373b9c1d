#!/usr/bin/env node
// Finds a Chromium for the browser tests, so that the README's `npm test` works on a fresh machine.
// Looks at CHROMIUM_PATH, the system's chromium / chromium-browser / google-chrome, then Playwright's
// own cache. With --install, when none is found: `npx playwright install chromium` (the standard way);
// where that cannot download, as root on Debian/Ubuntu, `apt-get install chromium` (saying so);
// otherwise it stops with the one command to run. Prints the path found; exit 1 when there is none.
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { aptInstall } from './ensure-installed.mjs';

const SYSTEM_NAMES = ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable'];

function executable(file) {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(name) {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir && executable(path.join(dir, name))) return path.join(dir, name);
  }
  return undefined;
}

function playwrightCache() {
  try {
    const file = createRequire(import.meta.url)('playwright-core').chromium.executablePath();
    return file && existsSync(file) ? file : undefined;
  } catch {
    return undefined;
  }
}

/** The first usable Chromium, or undefined. */
export function findChromium() {
  const given = process.env.CHROMIUM_PATH;
  if (given) return executable(given) ? given : undefined;
  for (const name of SYSTEM_NAMES) {
    const found = onPath(name);
    if (found) return found;
  }
  return playwrightCache();
}

/**
 * One line for a failed download: the first line naming an error (`getaddrinfo ENOTFOUND …`), else
 * the last line printed, else the exit status.
 */
export function downloadFailure(output, { status, error } = {}) {
  const lines = output
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  const named = lines.find((line) => /\b(E[A-Z]{3,}|Error|error|failed)\b/.test(line) && !/^at\s/.test(line));
  return (named ?? lines.at(-1) ?? (error ? error.message : `exit status ${status}`)).slice(0, 300);
}

function isDebianRoot() {
  return process.getuid?.() === 0 && existsSync('/etc/debian_version') && onPath('apt-get') !== undefined;
}

/** Finds or installs a Chromium; returns its path, or undefined after printing what the user must run. */
export function ensureChromium(log = (line) => console.error(line)) {
  const found = findChromium();
  if (found || process.env.CHROMIUM_PATH) return found;
  log('No Chromium found for the browser tests; running `npx playwright install chromium`…');
  // Its output is kept: where it cannot download it prints the same network stack for each retry.
  const download = spawnSync('npx', ['playwright', 'install', 'chromium'], { encoding: 'utf8' });
  const downloaded = findChromium();
  if (downloaded) return downloaded;
  log(`Playwright could not download Chromium: ${downloadFailure(`${download.stdout ?? ''}\n${download.stderr ?? ''}`, download)}`);
  if (isDebianRoot()) {
    log('Installing the distribution package instead (apt-get install --no-install-recommends chromium)…');
    aptInstall(['chromium']);
    const installed = findChromium();
    if (installed) return installed;
  }
  log('No Chromium could be installed. Install one and run the tests again, e.g.: sudo apt-get install chromium');
  log('(or set CHROMIUM_PATH to a Chromium or Chrome executable)');
  return undefined;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const found = process.argv.includes('--install') ? ensureChromium() : findChromium();
  if (found) console.log(found);
  else if (!process.argv.includes('--install'))
    console.error('No Chromium found (CHROMIUM_PATH, chromium, chromium-browser, google-chrome, Playwright cache).');
  process.exitCode = found ? 0 : 1;
}
