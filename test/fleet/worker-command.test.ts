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
  const list = new AllowList([
    ...AllowList.parse(['node /opt/review.mjs']),
    { argv: ['/opt/agent'], cwd: '/opt' },
    { argv: ['node', '/srv/tpl/b/agent.mjs'], cwd: '/srv/tpl/b', preset: 'b' },
  ]);
  const job = (command: string, args: string[], preset?: string) => ({ taskId: 'abc', command, args, ...(preset ? { preset } : {}) });

  test('a command line that starts with an entry is allowed; the one `--task-id=` the broker appends last is kept', () => {
    expect(list.admit(job('node', ['/opt/review.mjs', '--fast', '--task-id=abc']))).toEqual({
      command: 'node',
      args: ['/opt/review.mjs', '--fast', '--task-id=abc'],
      cwd: undefined,
    });
    expect(list.admit(job('/opt/agent', ['--task-id=abc']))).toEqual({ command: '/opt/agent', args: ['--task-id=abc'], cwd: '/opt' });
  });

  test('any other `--task-id=` argument is judged like every argument (it was skipped wherever it stood)', () => {
    expect(list.admit(job('node', ['--task-id=x', '/opt/review.mjs', '--task-id=abc']))).toMatch(
      /^refuses `node --task-id=x \/opt\/review.mjs`/,
    );
    expect(list.admit(job('/opt/agent', ['--task-id=other']))).toEqual({ command: '/opt/agent', args: ['--task-id=other'], cwd: '/opt' });
    expect(list.admit(job('node', ['--task-id=abc', '/opt/review.mjs']))).toMatch(/^refuses/);
  });

  test("a job naming a preset runs the worker's own copy of it, if its command line is that preset's", () => {
    expect(list.admit(job('node', ['/elsewhere/b/agent.mjs', '--task-id=abc'], 'b'))).toEqual({
      command: 'node',
      args: ['/srv/tpl/b/agent.mjs', '--task-id=abc'],
      cwd: '/srv/tpl/b',
    });
    expect(list.admit(job('sh', ['-c', 'id'], 'b'))).toMatch(/^refuses `sh -c id`: not the command line of preset "b"/);
    expect(list.admit(job('node', ['/x/agent.mjs'], 'cursor-cli'))).toMatch(/nor does this worker hold preset "cursor-cli"/);
  });

  test('anything else is refused with the way to allow it', () => {
    expect(list.admit(job('node', ['-e', 'process.exit()']))).toMatch(
      /^refuses `node -e process.exit\(\)`: not an allowed command.*--allow/,
    );
    expect(list.admit(job('node', []))).toMatch(/refuses `node`/);
    expect(list.admit(job('/opt/agentx', []))).toMatch(/refuses/);
    // The script Node runs is the command: `node review.mjs` elsewhere is another program.
    expect(list.admit(job('node', ['review.mjs']))).toMatch(/refuses/);
  });
});
