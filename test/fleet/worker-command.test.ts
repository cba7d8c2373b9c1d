/** `backchannel worker` as a command (usage errors need no Redis), and the allow-list it enforces. */
import { spawnSync } from 'node:child_process';
import { describe, expect, test } from 'vitest';
import { AllowList } from '../../src/fleet/index.js';
import { BIN } from './workers.js';

const worker = (...args: string[]) => spawnSync(process.execPath, [BIN, 'worker', ...args], { encoding: 'utf8' });

describe('backchannel worker', () => {
  test('--help explains the options and exits 0', () => {
    const result = worker('--help');
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('--redis <url>');
    expect(result.stdout).toContain('--allow <command>');
  });

  test('without --redis, or with nothing allowed, it is a usage error (exit 2)', () => {
    const noRedis = worker('--allow', 'node a.mjs');
    expect(noRedis.status).toBe(2);
    expect(noRedis.stderr).toContain('`--redis <url>` is required');
    const nothing = worker('--redis', 'redis://127.0.0.1:1');
    expect(nothing.status).toBe(2);
    expect(nothing.stderr).toContain('nothing allowed to run');
    expect(worker('--redis', 'redis://x', '--allow', 'a', '--concurrency', '0').status).toBe(2);
  });
});

describe('the allow-list', () => {
  const list = new AllowList([...AllowList.parse(['node /opt/review.mjs']), { argv: ['/opt/agent'], cwd: '/opt' }]);

  test('a command line that starts with an entry is allowed (the task-id argument aside)', () => {
    expect(list.match('node', ['/opt/review.mjs', '--fast', '--task-id=abc'])).toEqual({ argv: ['node', '/opt/review.mjs'] });
    expect(list.match('/opt/agent', ['--task-id=abc'])).toEqual({ argv: ['/opt/agent'], cwd: '/opt' });
  });

  test('anything else is refused with the way to allow it', () => {
    expect(list.match('node', ['-e', 'process.exit()'])).toMatch(/^refuses `node -e process.exit\(\)`: not an allowed command.*--allow/);
    expect(list.match('node', [])).toMatch(/refuses `node`/);
    expect(list.match('/opt/agentx', [])).toMatch(/refuses/);
  });
});
