import { describe, expect, test } from 'vitest';
import { commandLine, compareTasks, countsText, failureText, formatDuration, formatTime, taskTime } from '../../src/renderer/format.js';
import type { TaskSnapshot, TaskState } from '../../src/model/task.js';

function task(id: string, state: TaskState, times: Partial<Pick<TaskSnapshot, 'createdAt' | 'startedAt' | 'endedAt'>> = {}): TaskSnapshot {
  return {
    id,
    label: id,
    state,
    command: 'node',
    args: [],
    cwd: '/',
    attempt: 1,
    maxAttempts: 1,
    createdAt: '2026-11-30T08:00:00.000Z',
    counters: { malformed: 0, rejected: 0, ignored: 0 },
    ...times,
  };
}

describe('compareTasks', () => {
  test('orders running (longest first), then queued (next first), then finished (newest first)', () => {
    const tasks = [
      task('done-early', 'succeeded', { endedAt: '2026-11-30T08:01:00.000Z' }),
      task('queued-second', 'queued', { createdAt: '2026-11-30T08:00:05.000Z' }),
      task('running-new', 'running', { startedAt: '2026-11-30T08:00:09.000Z' }),
      task('done-late', 'failed', { endedAt: '2026-11-30T08:02:00.000Z' }),
      task('queued-first', 'queued', { createdAt: '2026-11-30T08:00:01.000Z' }),
      task('retrying', 'retrying', { startedAt: '2026-11-30T08:00:02.000Z' }),
      task('interrupted', 'interrupted', { startedAt: '2026-11-30T07:00:00.000Z' }),
    ];
    expect(tasks.sort(compareTasks).map((t) => t.id)).toEqual([
      'retrying',
      'running-new',
      'queued-first',
      'queued-second',
      'done-late',
      'done-early',
      'interrupted',
    ]);
  });
});

describe('formatting', () => {
  test('durations read like a clock, with tenths of a second below a minute and no space inside', () => {
    expect([450, 999.7, 4_200, 6_500, 42_000, 59_960, 125_000, 3_720_000].map(formatDuration)).toEqual([
      '450ms',
      '1s',
      '4.2s',
      '6.5s',
      '42s',
      '1m00s',
      '2m05s',
      '1h02m',
    ]);
  });

  test('a finished task shows its total time, an interrupted one none', () => {
    const t = task('a', 'succeeded', { startedAt: '2026-11-30T08:00:00.000Z', endedAt: '2026-11-30T08:00:42.000Z' });
    expect(taskTime(t, Date.parse('2026-11-30T09:00:00.000Z'))).toBe('42s');
    expect(taskTime(task('b', 'interrupted', { startedAt: '2026-11-30T08:00:00.000Z' }), Date.now())).toBe('–');
  });

  test('command lines quote what a shell would split, for display only', () => {
    expect(commandLine('/bin/agent', ['--mode=x', 'two words', '$HOME'])).toBe('/bin/agent --mode=x "two words" "$HOME"');
  });

  test('tray counts name running, queued and failed tasks', () => {
    expect(
      countsText([task('a', 'running'), task('b', 'retrying'), task('c', 'queued'), task('d', 'failed'), task('e', 'succeeded')]),
    ).toBe('2 running, 1 queued, 1 failed');
    expect(countsText([])).toBe('Idle');
  });
});

describe('failureText', () => {
  test("the reason's words, then the failure's detail (the broker's framing is a field apart, not stripped from text)", () => {
    const failed = { ...task('a', 'failed'), reason: 'error' as const, message: 'failed: rate limited', detail: 'rate limited' };
    expect(failureText(failed)).toBe('The sub-agent reported an error: rate limited');
    const protocol = {
      ...task('b', 'failed'),
      reason: 'protocol' as const,
      message: 'protocol error: line too long',
      detail: 'line too long',
    };
    expect(failureText(protocol)).toBe('The sub-agent broke the protocol: line too long');
  });

  test('an agent message that happens to start with "failed: " is shown whole', () => {
    const failed = { ...task('a', 'failed'), reason: 'error' as const, message: 'failed: failed: 3 tests', detail: 'failed: 3 tests' };
    expect(failureText(failed)).toBe('The sub-agent reported an error: failed: 3 tests');
  });

  test('a history line from before the detail field shows its message as it was written', () => {
    const old = { ...task('a', 'failed'), reason: 'error' as const, message: 'failed: rate limited' };
    expect(failureText(old)).toBe('The sub-agent reported an error: failed: rate limited');
    const crashed = { ...task('c', 'failed'), reason: 'crashed' as const, message: 'the agent exited with code 3' };
    expect(failureText(crashed)).toBe('The sub-agent crashed: the agent exited with code 3');
    expect(failureText(task('d', 'interrupted'))).toBe('Interrupted');
  });
});

describe('formatTime', () => {
  test('writes what toLocaleString writes with the same options, from one formatter made once', () => {
    for (const iso of ['2026-11-30T08:00:00.000Z', '2026-01-02T23:59:59.999Z', '1999-12-31T12:30:05Z']) {
      expect(formatTime(iso)).toBe(new Date(iso).toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'medium' }));
    }
    expect(formatTime(undefined)).toBe('–');
    expect(formatTime('not a date')).toBe('not a date');
  });
});
