#!/usr/bin/env node
// `npm start`: installs first on a fresh clone (scripts/ensure-installed.mjs), then the Electron app
// where Electron's binary is installed and a display exists; otherwise the same panel headless
// (`backchannel serve --demo`) in a browser, saying why.
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

/**
 * Where Electron's binary would be, without `require('electron')`: that module downloads the
 * binary when it is missing, which must not happen behind the user's back.
 */
function electronBinary() {
  const dir = join(root, 'node_modules', 'electron');
  const pathFile = join(dir, 'path.txt');
  if (!existsSync(pathFile))
    return { reason: 'the electron package has no binary (it was installed with ELECTRON_SKIP_BINARY_DOWNLOAD=1, or its download failed)' };
  const relative = readFileSync(pathFile, 'utf8').trim();
  const binary = process.env.ELECTRON_OVERRIDE_DIST_PATH
    ? join(process.env.ELECTRON_OVERRIDE_DIST_PATH, relative)
    : join(dir, 'dist', relative);
  return existsSync(binary) ? { binary } : { reason: `Electron's binary is missing (${binary})` };
}

function hasDisplay() {
  if (process.platform !== 'linux') return true;
  return Boolean(process.env.DISPLAY || process.env.WAYLAND_DISPLAY);
}

const electron = electronBinary();
if (electron.binary && hasDisplay()) {
  const env = { ...process.env };
  // A leaked ELECTRON_RUN_AS_NODE would start Electron as plain Node.
  delete env.ELECTRON_RUN_AS_NODE;
  const child = spawn(electron.binary, [join(root, 'dist', 'main', 'main.js')], { stdio: 'inherit', env });
  child.on('exit', (code, signal) => process.exit(signal ? 1 : (code ?? 0)));
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
} else {
  const why = electron.binary ? 'there is no display (neither DISPLAY nor WAYLAND_DISPLAY is set)' : electron.reason;
  console.log(`Not starting the desktop app: ${why}.`);
  console.log('Starting the same panel headless instead, with a few demo tasks; open the URL below in a browser.');
  if (!electron.binary) console.log('(For the desktop app: `npx install-electron`, then `npm start` again.)\n');
  const { main } = await import('../dist/cli/main.js');
  process.exitCode = await main(['serve', '--demo', ...process.argv.slice(2)]);
}
