/** `backchannel new` refuses a directory another user could change (issue 12 item 7). */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { ROOT, tempDir } from '../helpers/core.js';

const BIN = path.join(ROOT, 'bin/backchannel.js');
const noRunuser = spawnSync('runuser', ['--help']).error
  ? 'runuser is not installed'
  : process.getuid?.() !== 0
    ? 'acting as nobody needs root'
    : undefined;

function scaffold(dir: string) {
  return spawnSync(process.execPath, [BIN, 'new', dir, '--template', 'raw-node', '--no-link'], { cwd: ROOT, encoding: 'utf8' });
}

describe('backchannel new into an existing directory', () => {
  test.skipIf(noRunuser)(
    `an empty directory made by another user (nobody) is refused${noRunuser ? ` (skipped: ${noRunuser})` : ''}`,
    () => {
      const shared = tempDir();
      chmodSync(shared, 0o1777);
      const dir = path.join(shared, 'agent');
      expect(spawnSync('runuser', ['-u', 'nobody', '--', 'mkdir', '-m', '755', dir]).status).toBe(0);
      const result = scaffold(dir);
      expect(result.status).toBe(1);
      expect(result.stderr).toMatch(/belongs to uid 65534, not to you/);
      expect(readdirSync(dir)).toEqual([]);
    },
  );

  test('an empty directory of ours that others can write is refused; a private one is used', () => {
    const open = path.join(tempDir(), 'open');
    mkdirSync(open);
    chmodSync(open, 0o777);
    const refused = scaffold(open);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/is writable by everyone/);
    expect(readdirSync(open)).toEqual([]);

    chmodSync(open, 0o755);
    expect(scaffold(open).status).toBe(0);
    expect(readdirSync(open)).toContain('agent.mjs');
  });
});
