import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, test } from 'vitest';
import { ROOT, tempDir } from '../helpers/core.js';
import { RUN_MODES, runMode } from '../helpers/run-modes.js';
import { cli } from '../hub/control/hub-process.js';

const execFileP = promisify(execFile);

/** `backchannel run --json --save-attachments <out>` on the raw-node template surveying itself. */
function runSaving(dir: string, out: string, env: Record<string, string>, extra: string[] = []) {
  return execFileP(
    process.execPath,
    [
      'bin/backchannel.js',
      'run',
      '--json',
      '--save-attachments',
      out,
      ...extra,
      '--input',
      '{"path":"templates/raw-node"}',
      '--',
      'node',
      'templates/raw-node/agent.mjs',
    ],
    { cwd: ROOT, env: { ...process.env, CURSOR_IPC_DIR: path.join(dir, 'ipc'), ...env } },
  );
}

describe.each(RUN_MODES)('backchannel run and attachments (%s)', (mode) => {
  const where = runMode(mode);

  test('--json prints attachments as name and size; --save-attachments writes them to a directory', async () => {
    const dir = tempDir();
    const out = path.join(dir, 'out');
    const { stdout } = await runSaving(dir, out, where.env());
    const payload = JSON.parse(stdout);
    const file = path.join(out, 'files.txt');
    expect(payload.attachments).toEqual([{ name: 'files.txt', bytes: fs.statSync(file).size, encoding: 'utf8', path: file }]);
    expect(fs.readFileSync(file, 'utf8').split('\n')).toContain('agent.mjs');
    expect(stdout.split('\n').filter(Boolean)).toHaveLength(1);
  });

  test('a symlink where an attachment would be saved is refused, not followed', async () => {
    const dir = tempDir();
    const out = path.join(dir, 'out');
    fs.mkdirSync(out);
    fs.writeFileSync(path.join(dir, 'victim'), 'keep me');
    fs.symlinkSync(path.join(dir, 'victim'), path.join(out, 'files.txt'));
    const run = runSaving(dir, out, where.env());
    await expect(run).rejects.toThrow(/ELOOP/);
    expect(fs.readFileSync(path.join(dir, 'victim'), 'utf8')).toBe('keep me');
  });

  // --no-task-id-arg used to force a run in this process silently (the task never showed in the hub's panel).
  test('--no-task-id-arg runs where any task runs: on the hub when one runs, with no --task-id argument', async () => {
    const env = { ...process.env, ...where.env() };
    const run = await cli(['run', '--json', '--no-task-id-arg', '--label', 'no id arg', '--', 'node', 'templates/raw-node/agent.mjs'], env);
    expect(run.code, `${run.stdout}${run.stderr}`).toBe(0);
    expect(JSON.parse(run.stdout).status).toBe('success');
    if (!where.socket) return;
    const tasks = JSON.parse((await cli(['tasks', '--json'], env)).stdout) as Array<{ label: string; args: string[] }>;
    const task = tasks.find((t) => t.label === 'no id arg');
    expect(task, 'the task is in the hub').toBeDefined();
    expect(task!.args.some((arg) => arg.startsWith('--task-id='))).toBe(false);
  });

  test('--save-attachments says that it runs the task in this process, naming the flag', async () => {
    const dir = tempDir();
    const { stderr } = await runSaving(dir, path.join(dir, 'out'), where.env());
    expect(stderr).toBe(
      "backchannel run: --save-attachments runs the task in this process, not on a hub (a hub's result carries attachments as name and size only)\n",
    );
  });

  test('--detach with --save-attachments is refused, naming that flag (not --local, which was never given)', async () => {
    const run = await cli(['run', '--detach', '--save-attachments', tempDir(), '--', 'node', '-e', '1'], {
      ...process.env,
      ...where.env(),
    });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--detach returns before the result; it cannot be used with --save-attachments');
    expect(run.stderr).not.toContain('--local');
  });
});
