#!/usr/bin/env node
// `npm start`: installs first on a fresh clone (scripts/ensure-installed.mjs), then the Electron app.
// Where Electron's binary is missing, it is downloaded first (once, with a progress line); where that
// fails or there is no display, the same panel is served headless (`backchannel serve --demo`) for a
// browser, saying which.
// Extra arguments go to `serve` (e.g. `npm start -- --port 8080`).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureInstalled } from './ensure-installed.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
ensureInstalled(root);
const built = ['dist/cli/main.js', 'dist/main/main.js', 'dist/renderer/index.html', 'dist/preload/index.cjs'];
if (!built.every((file) => existsSync(join(root, file)))) {
  console.log('Building first (npm run build)…');
  const result = spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

const electronDir = join(root, 'node_modules', 'electron');

/**
 * Where Electron's binary is, without `require('electron')` (that module would download a missing
 * binary silently, in the middle of starting).
 */
function electronBinary() {
  if (!existsSync(join(electronDir, 'package.json')))
    return { reason: 'the electron package is not installed (npm install --include=dev)' };
  const pathFile = join(electronDir, 'path.txt');
  if (!existsSync(pathFile)) return { missing: true, reason: "Electron's binary has not been downloaded yet" };
  const relative = readFileSync(pathFile, 'utf8').trim();
  const binary = process.env.ELECTRON_OVERRIDE_DIST_PATH
    ? join(process.env.ELECTRON_OVERRIDE_DIST_PATH, relative)
    : join(electronDir, 'dist', relative);
  return existsSync(binary) ? { binary } : { missing: true, reason: `Electron's binary is missing (${binary})` };
}

function hasDisplay() {
  if (process.platform !== 'linux') return true;
  return Boolean(process.env.DISPLAY || process.env.WAYLAND_DISPLAY);
}

/** How long the one-time download may take before we give up and start headless. */
const DOWNLOAD_TIMEOUT_MS = 10 * 60_000;

/**
 * Gets Electron's binary with the electron package's own installer (`install-electron`), showing
 * one progress line (elapsed time; the installer itself prints nothing until it is done).
 * Resolves with undefined on success, or the reason it failed.
 */
function downloadElectron() {
  const version = JSON.parse(readFileSync(join(electronDir, 'package.json'), 'utf8')).version;
  const label = `Getting Electron ${version}'s binary for the desktop app (first start only, about 100 MB)`;
  const started = Date.now();
  const tty = process.stdout.isTTY;
  const show = () => {
    const seconds = Math.round((Date.now() - started) / 1000);
    if (tty) process.stdout.write(`\r${label}… ${seconds}s`);
  };
  if (tty) show();
  else console.log(`${label}…`);
  const ticker = setInterval(show, 1000);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(electronDir, 'install.js')], { cwd: electronDir, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr = (stderr + chunk).slice(-4000)));
    const timer = setTimeout(() => child.kill('SIGTERM'), DOWNLOAD_TIMEOUT_MS);
    const done = (reason) => {
      clearInterval(ticker);
      clearTimeout(timer);
      if (tty) process.stdout.write('\n');
      console.log(
        reason ? `Could not get Electron's binary: ${reason}` : `Got Electron's binary in ${Math.round((Date.now() - started) / 1000)}s.`,
      );
      resolve(reason);
    };
    child.on('error', (error) => done(error.message));
    child.on('close', (code, signal) => {
      if (code === 0) return done(undefined);
      const last = stderr
        .split('\n')
        .map((line) => line.trim())
        .find((line) => /error/i.test(line));
      done(signal ? `stopped after ${DOWNLOAD_TIMEOUT_MS / 60_000} min` : (last ?? `the installer exited with code ${code}`));
    });
  });
}

let electron = electronBinary();
let why;
if (!hasDisplay()) {
  why = 'there is no display (neither DISPLAY nor WAYLAND_DISPLAY is set)';
} else if (electron.missing) {
  const failed = await downloadElectron();
  electron = failed ? { reason: `its download failed (${failed})` } : electronBinary();
}
if (!why && !electron.binary) why = electron.reason;

if (!why) {
  const env = { ...process.env };
  // A leaked ELECTRON_RUN_AS_NODE would start Electron as plain Node.
  delete env.ELECTRON_RUN_AS_NODE;
  const child = spawn(electron.binary, [join(root, 'dist', 'main', 'main.js')], { stdio: 'inherit', env });
  child.on('exit', (code, signal) => process.exit(signal ? 1 : (code ?? 0)));
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
} else {
  console.log(`Not starting the desktop app: ${why}.`);
  // `serve --demo` itself says whether it adds demo tasks (only to an empty history).
  console.log('Starting the same panel headless instead; open the URL below in a browser.\n');
  const { main } = await import('../dist/cli/main.js');
  process.exitCode = await main(['serve', '--demo', ...process.argv.slice(2)]);
}
