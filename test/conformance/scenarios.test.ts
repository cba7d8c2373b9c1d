/** The scenario judges read the broker's log events, never its text: a note is judged by its fields. */
import { describe, expect, test } from 'vitest';
import type { Observation } from '../../src/conformance/observe.js';
import { SCENARIOS } from '../../src/conformance/scenarios.js';
import type { LogEvent, LogLine, TaskSnapshot } from '../../src/model/task.js';

const TIME = '2026-11-30T08:00:00.000Z';

function note(text: string, event?: LogEvent): LogLine {
  return event ? { time: TIME, stream: 'broker', text, event } : { time: TIME, stream: 'broker', text };
}

function run(log: LogLine[], snapshot: Partial<TaskSnapshot> = {}, extra: Partial<Observation> = {}): Observation {
  return {
    plan: {},
    snapshot: {
      id: 't',
      label: 'check',
      state: 'succeeded',
      command: 'agent',
      args: [],
      cwd: '/',
      attempt: 1,
      maxAttempts: 1,
      createdAt: TIME,
      counters: { malformed: 0, rejected: 0, ignored: 0 },
      exitCode: 0,
      ...snapshot,
    },
    payloads: [],
    log,
    endedAt: 100,
    ...extra,
  };
}

function judge(name: string, runs: Record<string, Observation>) {
  const scenario = SCENARIOS.find((s) => s.name === name)!;
  return scenario.judge(runs);
}

const received = note('received via socket: {"status":"partial"}', { kind: 'received', via: 'socket' });

describe('scenario judges', () => {
  test('connect: an auth rejection fails it, whatever the words; text alone that looks like one does not', () => {
    const refused = note('rejected: the key did not match', {
      kind: 'problem',
      problem: 'rejected',
      detail: 'the key did not match',
      cause: 'auth',
    });
    expect(judge('connect', { main: run([refused, received]) })).toMatchObject({ status: 'fail', line: 'the key did not match' });
    expect(judge('connect', { main: run([note('rejected: wrong token'), received]) })).toEqual({ status: 'pass' });
  });

  test('connect and task-id count arrived lines by their event, not by a "received via" prefix', () => {
    expect(judge('connect', { main: run([note('received via socket: {}')]) })).toMatchObject({ status: 'fail' });
    const wrongId = note('rejected: not ours', { kind: 'problem', problem: 'rejected', detail: 'not ours', cause: 'task-id' });
    const ok = run([received]);
    expect(judge('task-id', { argvOnly: run([wrongId, received]), envOnly: ok })).toMatchObject({
      status: 'fail',
      detail: expect.stringContaining('wrong one: not ours'),
    });
    expect(judge('task-id', { argvOnly: ok, envOnly: ok })).toEqual({ status: 'pass' });
  });

  test('cancel: the confirmation is the cancel-confirmed event; a late success is told by its status', () => {
    const cancelled = { state: 'cancelled' as const, reason: 'cancelled' as const, signal: null };
    const confirmed = run(
      [note('stopping', { kind: 'stopping', reason: 'cancelled' }), note('ok', { kind: 'cancel-confirmed' })],
      cancelled,
      { cancelAt: 10 },
    );
    expect(judge('cancel', { cancelled: confirmed })).toMatchObject({ status: 'pass' });
    const unconfirmed = run([note('the agent confirmed the cancel')], { ...cancelled, signal: 'SIGKILL' }, { cancelAt: 10 });
    expect(judge('cancel', { cancelled: unconfirmed })).toMatchObject({ status: 'fail' });
    const late = note('ignored: it was done', { kind: 'problem', problem: 'ignored', detail: 'it was done', status: 'success' });
    expect(judge('cancel', { cancelled: run([late], cancelled, { cancelAt: 10 }) })).toMatchObject({ status: 'warn' });
  });

  test('clean-exit and final-once: leftover processes and late lines come from events', () => {
    const leftover = note('processes were left', { kind: 'leftover-processes' });
    expect(judge('clean-exit', { main: run([leftover]) })).toMatchObject({ status: 'fail', line: 'processes were left' });
    expect(judge('clean-exit', { main: run([note('the agent left processes running in its process group; killed them')]) })).toEqual({
      status: 'pass',
    });
    const ignored = note('ignored: x', {
      kind: 'problem',
      problem: 'ignored',
      detail: 'partial payload via socket after the task was decided',
    });
    expect(judge('final-once', { main: run([ignored]) })).toMatchObject({
      status: 'fail',
      line: 'partial payload via socket after the task was decided',
    });
  });
});
