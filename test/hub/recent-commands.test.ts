/**
 * `info()`'s recent commands: which command lines count as one, and that reading the newest tasks
 * for them makes no per-task garbage (a key string a task was a busy hub's second largest allocation).
 */
import { afterEach, expect, test, vi } from 'vitest';
import { distinctCommands } from '../../src/hub/recent-commands.js';
import type { CommandLine } from '../../src/model/task.js';

afterEach(() => vi.restoreAllMocks());

const line = (command: string, args: string[], cwd = '/w', label = command): CommandLine => ({ command, args, cwd, label });

test('a command line is one when its command, every arg and its cwd are', () => {
  const newestFirst = [
    line('node', ['a.mjs', 'x']),
    line('node', ['a.mjs', 'x'], '/w', 'an older label'), // the same line: the newest label is kept
    line('node', ['a.mjs']), // one arg fewer
    line('node', ['a.mjs', 'y']), // another arg
    line('node', ['a.mjs', 'x'], '/elsewhere'), // another cwd
    line('python3', ['a.mjs', 'x']), // another command
    line('node', ['a.mjsx']), // the args joined alike are still other args
    line('node', ['a.mjs', 'x']),
  ];
  expect(distinctCommands(newestFirst, 8)).toEqual([
    { command: 'node', args: ['a.mjs', 'x'], cwd: '/w', label: 'node' },
    { command: 'node', args: ['a.mjs'], cwd: '/w', label: 'node' },
    { command: 'node', args: ['a.mjs', 'y'], cwd: '/w', label: 'node' },
    { command: 'node', args: ['a.mjs', 'x'], cwd: '/elsewhere', label: 'node' },
    { command: 'python3', args: ['a.mjs', 'x'], cwd: '/w', label: 'python3' },
    { command: 'node', args: ['a.mjsx'], cwd: '/w', label: 'node' },
  ]);
});

test('stops reading at the limit, and hands out copies of the args', () => {
  let read = 0;
  const args = ['only.mjs'];
  function* newestFirst(): Generator<CommandLine> {
    for (let i = 0; ; i++, read++) yield line('node', i === 0 ? args : [`${i}.mjs`]);
  }
  const recent = distinctCommands(newestFirst(), 3);
  expect(recent.map((request) => request.args)).toEqual([['only.mjs'], ['1.mjs'], ['2.mjs']]);
  expect(read).toBe(2);
  recent[0]!.args!.push('changed');
  expect(args).toEqual(['only.mjs']);
});

test('reading 10,000 tasks of one command line serializes none of them', () => {
  const stringify = vi.spyOn(JSON, 'stringify');
  const same = Array.from({ length: 10_000 }, () => line('node', ['same.mjs', '--flag']));
  expect(distinctCommands(same, 8)).toHaveLength(1);
  expect(stringify).not.toHaveBeenCalled();
});
