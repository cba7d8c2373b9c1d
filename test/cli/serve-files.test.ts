/**
 * Issue 23 items 14 and 15: the files `serve` keeps in its data directory. The log file is written
 * wherever serve is started (outside a directory with a package.json electron-log found no app
 * name and wrote nothing, silently); `--keep-token` never reads `panel-token` through a symlink or
 * from a file another user owns (whoever planted it would choose the panel's token).
 */
import { chownSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { tempDir, waitFor } from '../helpers/core.js';
import { hubEnv, printed, start } from '../hub/control/hub-process.js';

describe('serve and its data directory', () => {
  test('started in an empty directory (no package.json above it), serve writes the documented log file', async () => {
    const hub = hubEnv();
    const empty = tempDir('bc-empty-cwd-');
    const proc = start(['serve', '--data-dir', path.join(hub.dir, 'data')], hub.env, empty);
    await waitFor(() => /Backchannel panel: \S+/.test(proc.stdout()) || proc.child.exitCode !== null, 'serve to print its URL', 20_000, 25);
    expect(proc.stdout()).toMatch(/Backchannel panel: /);
    const log = path.join(hub.dir, 'data', 'logs', 'backchannel.log');
    const text = await waitFor(() => existsSync(log) && readFileSync(log, 'utf8'), 'the log file to be written', 10_000, 50);
    expect(text).toContain(`control endpoint listening on ${hub.socket}`);
  });

  const attacker = 'f'.repeat(64);
  test.each([
    [
      'a symlink',
      (file: string, dir: string) => {
        const theirs = path.join(dir, 'theirs');
        writeFileSync(theirs, attacker + '\n', { mode: 0o644 });
        symlinkSync(theirs, file);
      },
      /panel-token is a symlink; remove it \(the panel token is never read through one\)/,
    ],
    [
      'a file another user owns',
      (file: string) => {
        writeFileSync(file, attacker + '\n', { mode: 0o600 });
        chownSync(file, 65534, 65534);
      },
      /panel-token belongs to uid 65534, not to this user \(uid 0\); remove it/,
    ],
  ] as const)('serve --keep-token refuses panel-token when it is %s, with one line, and serves nothing', async (_what, plant, message) => {
    const hub = hubEnv();
    const data = path.join(hub.dir, 'data');
    mkdirSync(data, { mode: 0o700 });
    plant(path.join(data, 'panel-token'), hub.dir);
    const proc = start(['serve', '--keep-token', '--data-dir', data], hub.env);
    expect(await proc.exited).toBe(1);
    expect(proc.stderr()).toMatch(message);
    expect(proc.stderr().trim().split('\n')).toHaveLength(1);
    expect(proc.stdout()).not.toContain(attacker);
  });

  test('serve --keep-token keeps its own token (a regular 0600 file of ours) across restarts', async () => {
    const hub = hubEnv();
    const args = ['serve', '--keep-token', '--data-dir', path.join(hub.dir, 'data')];
    const tokens: string[] = [];
    for (const round of [1, 2]) {
      const proc = start(args, hub.env);
      tokens.push(await printed(proc, /Backchannel panel: \S+token=([0-9a-f]+)/, `serve ${round} to print its URL`));
      proc.child.kill('SIGTERM');
      await proc.exited;
    }
    expect(tokens[0]).toMatch(/^[0-9a-f]{64}$/);
    expect(tokens[1]).toBe(tokens[0]);
  });
});
