/**
 * `npm start`: the desktop app, or — saying why — the same panel headless. Here there is no display
 * and no Electron binary, so both fallbacks are exercised: no display at all, and a display whose
 * Electron download fails (an unreachable mirror).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { expect, test } from 'vitest';

// On Windows these are skipped (reported as skipped): process groups and DISPLAY are POSIX.
import { ROOT, tempDir, waitFor } from '../helpers/core.js';

function start(command: string[], env: NodeJS.ProcessEnv, dir = tempDir('bc-start-')) {
  const child = spawn(command[0]!, command.slice(1), {
    cwd: ROOT,
    env: {
      ...process.env,
      XDG_STATE_HOME: dir,
      CURSOR_IPC_DIR: path.join(dir, 'ipc'),
      electron_config_cache: path.join(dir, 'cache'),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<string>((resolve) => child.on('close', (code, signal) => resolve(signal ?? String(code))));
  return {
    dir,
    output: () => output,
    async stop() {
      process.kill(-child.pid!, 'SIGINT');
      return exited;
    },
  };
}

test.skipIf(process.platform === 'win32')('npm start without a display serves the panel headless and says why', async () => {
  const run = start(['npm', 'start'], { DISPLAY: '', WAYLAND_DISPLAY: '' });
  await waitFor(() => run.output().includes('Backchannel panel: http://127.0.0.1:'), 'the headless panel URL', 30_000);
  expect(run.output()).toContain('Not starting the desktop app: there is no display');
  expect(run.output()).not.toContain('ELECTRON_SKIP_BINARY_DOWNLOAD');
  // npm re-raises the SIGINT its script got once the script has stopped.
  expect(['0', 'SIGINT']).toContain(await run.stop());
  expect(run.output()).toContain('backchannel serve: stopping');

  // The second start on the same history adds no demo tasks, and says only that.
  const again = start(['npm', 'start'], { DISPLAY: '', WAYLAND_DISPLAY: '' }, run.dir);
  await waitFor(() => again.output().includes('Backchannel panel: http://127.0.0.1:'), 'the headless panel URL', 30_000);
  expect(again.output()).toMatch(/History already holds \d+ task\(s\); not adding demo tasks/);
  expect(again.output()).not.toMatch(/with (a few )?demo tasks/);
  expect(['0', 'SIGINT']).toContain(await again.stop());
});

test.skipIf(process.platform === 'win32')(
  'with a display but no Electron binary, start tries to get it, and says so when that fails',
  async () => {
    const run = start([process.execPath, 'scripts/start.js'], { DISPLAY: ':99', ELECTRON_MIRROR: 'http://127.0.0.1:9/' });
    await waitFor(() => run.output().includes('Backchannel panel: http://127.0.0.1:'), 'the headless panel URL', 60_000);
    expect(run.output()).toMatch(/Getting Electron [\d.]+'s binary for the desktop app/);
    expect(run.output()).toContain("Could not get Electron's binary:");
    expect(run.output()).toContain('Not starting the desktop app: its download failed');
    expect(await run.stop()).toBe('0');
  },
);
