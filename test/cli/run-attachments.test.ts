import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, test } from 'vitest';
import { ROOT, tempDir } from '../helpers/core.js';

const execFileP = promisify(execFile);

/** `backchannel run --json --save-attachments <out>` on the raw-node template surveying itself. */
function runSaving(dir: string, out: string) {
  return execFileP(
    process.execPath,
    [
      'bin/backchannel.js',
      'run',
      '--json',
      '--save-attachments',
      out,
      '--input',
      '{"path":"templates/raw-node"}',
      '--',
      'node',
      'templates/raw-node/agent.mjs',
    ],
    { cwd: ROOT, env: { ...process.env, CURSOR_IPC_DIR: path.join(dir, 'ipc') } },
  );
}

describe('backchannel run and attachments', () => {
  test('--json prints attachments as name and size; --save-attachments writes them to a directory', async () => {
    const dir = tempDir();
    const out = path.join(dir, 'out');
    const { stdout } = await runSaving(dir, out);
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
    const run = runSaving(dir, out);
    await expect(run).rejects.toThrow(/ELOOP/);
    expect(fs.readFileSync(path.join(dir, 'victim'), 'utf8')).toBe('keep me');
  });
});
