/**
 * X15: a hub started with XDG_STATE_HOME set keeps its socket under it; a client whose host stripped
 * XDG_STATE_HOME (an MCP host's bare environment) still finds that hub, through the pointer the hub
 * writes in ~/.local/state/backchannel, instead of working on a second, empty history. The pointer
 * is gone when the hub stops; one that is a symlink is not followed.
 */
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { fixture, tempDir, waitFor } from '../helpers/core.js';
import { cli, printed, start } from '../hub/control/hub-process.js';

function environments() {
  const home = tempDir('bc-home-');
  const dir = tempDir('bc-hub-');
  const base = { ...process.env, HOME: home, XDG_RUNTIME_DIR: '', CURSOR_IPC_DIR: path.join(dir, 'ipc') };
  delete base.BACKCHANNEL_CONTROL;
  const hub = { ...base, XDG_STATE_HOME: path.join(dir, 'state') };
  const stripped = { ...base };
  delete stripped.XDG_STATE_HOME;
  return { home, hub, stripped, pointer: path.join(home, '.local/state/backchannel/hub-elsewhere.json') };
}

describe('a client without XDG_STATE_HOME', () => {
  test('finds the hub that has it, through the pointer in ~/.local/state; the pointer goes when the hub stops', async () => {
    const { hub, stripped, pointer } = environments();
    const serve = start(['serve'], hub);
    await printed(serve, /Backchannel panel: (\S+)/, 'serve to print its URL');
    expect(existsSync(pointer)).toBe(true);
    const run = await cli(['run', '--json', '--', process.execPath, fixture('quick.mjs')], hub);
    expect(run.code, run.stderr).toBe(0);
    const id = (JSON.parse(run.stdout) as { task_id: string }).task_id;
    const listed = await cli(['tasks', '--json'], stripped);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain(id);
    serve.child.kill('SIGTERM');
    await serve.exited;
    await waitFor(() => !existsSync(pointer), 'the pointer to be removed');
  });

  test('does not follow a pointer that is a symlink', async () => {
    const { home, stripped, pointer } = environments();
    const elsewhere = path.join(tempDir('bc-elsewhere-'), 'p.json');
    writeFileSync(elsewhere, JSON.stringify({ control: path.join(home, 'nowhere.sock') }));
    mkdirSync(path.dirname(pointer), { recursive: true, mode: 0o700 });
    symlinkSync(elsewhere, pointer);
    const listed = await cli(['tasks', '--json'], stripped);
    expect(listed.code, listed.stderr).toBe(0);
  });
});
