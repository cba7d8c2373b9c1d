/**
 * `backchannel run` behaves the same in-process and on a hub: CLI tests of `run` are written once and
 * run in both modes (`describe.each(RUN_MODES)`). In the hub mode a real `backchannel serve` runs in a
 * private directory for the whole describe block, and every CLI process of the block finds it through
 * the environment `runMode(mode).env()` gives.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { ROOT, waitFor } from './core.js';

export type RunMode = 'in-process' | 'on a hub';
export const RUN_MODES: RunMode[] = ['in-process', 'on a hub'];

export interface RunModeContext {
  /** Environment additions for the CLI processes of this mode (empty in-process). */
  env(): Record<string, string>;
  /** The hub's control endpoint, in the hub mode. */
  readonly socket: string | undefined;
}

/**
 * A directory for the whole block, removed after it (after its hub stopped). Not tempDir(): that one
 * is removed after the first test that ends, which in a block whose tests run at once (or beside the
 * other mode's) takes the hub's control endpoint from under the tests still running.
 */
function blockDir(prefix: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Call inside a `describe` block: starts the block's hub in the hub mode, stops it after. */
export function runMode(mode: RunMode): RunModeContext {
  if (mode === 'in-process') {
    // An endpoint where no hub listens.
    const none = path.join(blockDir('bc-nohub-'), 'control.sock');
    return { env: () => ({ BACKCHANNEL_CONTROL: none }), socket: undefined };
  }
  const dir = blockDir('bc-run-hub-');
  const env = {
    BACKCHANNEL_CONTROL: path.join(dir, 'control.sock'),
    XDG_STATE_HOME: path.join(dir, 'state'),
    XDG_RUNTIME_DIR: '',
  };
  let hub: ChildProcess | undefined;
  beforeAll(async () => {
    hub = spawn(process.execPath, [path.join(ROOT, 'bin/backchannel.js'), 'serve', '--port', '0', '--data-dir', path.join(dir, 'data')], {
      env: { ...process.env, ...env, CURSOR_IPC_DIR: path.join(dir, 'ipc') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    hub.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
    hub.stderr!.resume();
    await waitFor(
      () => {
        if (hub!.exitCode !== null) throw new Error(`serve exited: ${out}`);
        return out.includes('Backchannel panel:');
      },
      'the hub to start',
      45_000, // within the 60 s hook timeout, generous for a busy machine
      25,
    );
  });
  afterAll(async () => {
    if (!hub || hub.exitCode !== null) return;
    const gone = new Promise((resolve) => hub!.once('exit', resolve));
    hub.kill('SIGTERM');
    await gone;
  });
  return { env: () => env, socket: env.BACKCHANNEL_CONTROL };
}
