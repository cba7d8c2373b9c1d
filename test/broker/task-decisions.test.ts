/** Task transitions, the retry-versus-final decision and the ask/answer exchange, in memory. */
import { describe, expect, test, vi } from 'vitest';
import { TaskError } from '../../src/broker/errors.js';
import { decide, settle } from '../../src/broker/task/decision.js';
import { PendingQuestion } from '../../src/broker/task/questions.js';
import { Task } from '../../src/broker/task/task.js';
import type { BrokerMessage } from '../../src/protocol/index.js';
import type { TaskUpdate } from '../../src/model/task.js';
import { final, TASK_ID } from './in-memory.js';

function makeTask(maxAttempts = 1): { task: Task; updates: TaskUpdate[] } {
  const updates: TaskUpdate[] = [];
  const spec = { command: 'agent', tags: { source: 'test' } };
  const task = new Task({ id: TASK_ID, spec, label: 'agent', cwd: '/', maxAttempts }, 5, (update) => updates.push(update));
  return { task, updates };
}

describe('decide: retry or settle', () => {
  const crash = { kind: 'failure', reason: 'crashed', message: 'exited with code 1', retryable: true } as const;

  test('success and cancelled finals settle at once, even with attempts left', () => {
    expect(decide({ kind: 'final', payload: final('success', 1), channel: 'socket' }, true, false)).toMatchObject({ kind: 'succeed' });
    expect(decide({ kind: 'final', payload: final('cancelled'), channel: 'stdout' }, true, false)).toMatchObject({
      kind: 'fail',
      reason: 'cancelled',
      channel: 'stdout',
    });
  });

  test('an error is retried while attempts are left, unless the agent says retryable: false', () => {
    const error = final('error', { message: 'rate limited' });
    expect(decide({ kind: 'final', payload: error, channel: 'socket' }, true, false)).toEqual({
      kind: 'retry',
      why: 'agent error: rate limited',
    });
    expect(decide({ kind: 'final', payload: error, channel: 'socket' }, false, false)).toMatchObject({
      kind: 'fail',
      reason: 'error',
      message: 'failed: rate limited',
      detail: 'rate limited',
    });
    const final_ = final('error', 'bad input', { retryable: false });
    expect(decide({ kind: 'final', payload: final_, channel: 'socket' }, true, false)).toMatchObject({ kind: 'fail', reason: 'error' });
  });

  test('a crash is retried; a protocol failure or a cancel never is; a requested cancel names the reason', () => {
    expect(decide(crash, true, false)).toEqual({ kind: 'retry', why: 'exited with code 1' });
    expect(decide({ ...crash, reason: 'protocol', retryable: false }, true, false)).toMatchObject({ kind: 'fail', reason: 'protocol' });
    expect(decide({ ...crash, reason: 'timeout' }, true, false)).toMatchObject({ kind: 'retry' });
    expect(decide(crash, false, true)).toMatchObject({ kind: 'fail', reason: 'cancelled', message: 'exited with code 1' });
  });
});

describe('Task transitions', () => {
  test('the first settlement wins; later ones change nothing', async () => {
    const { task, updates } = makeTask();
    task.startAttempt(1);
    task.succeed(final('success', 'first', { token: 'secret' } as never), 'socket');
    task.fail('error', 'too late');
    expect(task.state).toBe('succeeded');
    const payload = await task.result;
    expect(payload).toMatchObject({ data: 'first', meta: { channel: 'socket', attempts: 1 } });
    expect(payload).not.toHaveProperty('token');
    expect(updates.filter((u) => u.kind === 'ended')).toHaveLength(1);
    expect(task.snapshot()).toMatchObject({ state: 'succeeded', progress: 100 });
  });

  test('a failure rejects the result with a TaskError carrying the stderr tail', async () => {
    const { task } = makeTask();
    task.startAttempt(1);
    task.log('stderr', 'Traceback: boom');
    task.fail('crashed', 'the agent exited with code 1');
    const error = await task.result.catch((e: unknown) => e);
    expect(TaskError.is(error)).toBe(true);
    expect(error).toMatchObject({ reason: 'crashed', stderrTail: 'Traceback: boom' });
    expect(task.snapshot()).toMatchObject({ state: 'failed', reason: 'crashed', stderrTail: 'Traceback: boom' });
    expect(error).toMatchObject({ message: 'agent: the agent exited with code 1', taskMessage: 'the agent exited with code 1' });
    expect(task.snapshot()).not.toHaveProperty('detail');
  });

  test("a reported error keeps the agent's own words as fields: the snapshot's detail and the TaskError's", async () => {
    const { task } = makeTask();
    task.startAttempt(1);
    const decision = decide(
      { kind: 'final', payload: final('error', { message: 'failed: upstream said no' }), channel: 'socket' },
      false,
      false,
    );
    expect(decision).toMatchObject({ kind: 'fail', message: 'failed: failed: upstream said no', detail: 'failed: upstream said no' });
    settle(task, decision as Exclude<typeof decision, { kind: 'retry' }>);
    expect(task.snapshot()).toMatchObject({ message: 'failed: failed: upstream said no', detail: 'failed: upstream said no' });
    expect(await task.result.catch((e: unknown) => e)).toMatchObject({
      reason: 'error',
      taskMessage: 'failed: failed: upstream said no',
      detail: 'failed: upstream said no',
    });
  });

  test('problems are counted and logged without an update; the log stays bounded', () => {
    const { task, updates } = makeTask();
    task.recordProblem('malformed', 'not JSON');
    task.recordProblem('ignored', 'late partial');
    expect(task.snapshot().counters).toEqual({ malformed: 1, rejected: 0, ignored: 1 });
    expect(task.logLines().map((l) => l.event)).toEqual([
      { kind: 'problem', problem: 'malformed', detail: 'not JSON' },
      { kind: 'problem', problem: 'ignored', detail: 'late partial' },
    ]);
    for (let i = 0; i < 10; i++) task.log('stdout', `line ${i}`);
    expect(task.logLines().map((l) => l.text)).toEqual(['line 5', 'line 6', 'line 7', 'line 8', 'line 9']);
    expect(task.logLines()[0]).not.toHaveProperty('event');
    expect(updates.map((u) => u.kind)).toEqual(Array(10).fill('log'));
  });

  test('retrying, the next attempt, then the exit of the decided one', () => {
    const { task, updates } = makeTask(2);
    task.startAttempt(1);
    task.spawned(111);
    task.retrying('agent error: flaky', 1000);
    expect(task.snapshot()).toMatchObject({ state: 'retrying', message: 'agent error: flaky', attempt: 1 });
    expect(task.logLines().at(-1)).toMatchObject({
      text: 'attempt 1 failed (agent error: flaky); retrying in 1000 ms',
      event: { kind: 'retrying', attempt: 1, delayMs: 1000 },
    });
    task.startAttempt(2);
    expect(task.snapshot()).not.toHaveProperty('pid');
    task.spawned(222);
    task.started();
    task.succeed(final('success'), 'stdout');
    expect(task.snapshot().pid).toBe(222);
    task.attemptExited(0, null);
    expect(task.snapshot()).toMatchObject({ exitCode: 0, signal: null, attempt: 2 });
    expect(task.snapshot()).not.toHaveProperty('pid');
    expect(updates.map((u) => u.kind)).toEqual(['retrying', 'started', 'ended', 'exited']);
  });

  test('an interrupted task from history takes a spooled result through the same transitions', () => {
    const { task: original } = makeTask();
    original.startAttempt(1);
    const interrupted = {
      ...original.snapshot(),
      state: 'interrupted' as const,
      reason: 'crashed' as const,
      message: 'the broker stopped',
    };
    const updates: TaskUpdate[] = [];
    const restored = Task.fromSnapshot(interrupted, (u) => updates.push(u));
    restored.fail('error', 'failed: nope (result recovered from the spool)', final('error', 'nope'), 'spool');
    expect(restored.snapshot()).toMatchObject({
      state: 'failed',
      reason: 'error',
      message: 'failed: nope (result recovered from the spool)',
      result: { meta: { channel: 'spool', attempts: 1 } },
      tags: { source: 'test' },
    });
    expect(updates).toEqual([expect.objectContaining({ kind: 'ended', state: 'failed' })]);
  });
});

describe('PendingQuestion', () => {
  test('one question at a time; the answer goes back once; a wrong id is refused', () => {
    const { task, updates } = makeTask();
    const question = new PendingQuestion(task, 60_000);
    const replies: BrokerMessage[] = [];
    question.ask({ type: 'ask', task_id: TASK_ID, ask_id: 'q1', question: 'Deploy?', choices: ['yes', 'no'] }, (m) => replies.push(m));
    question.ask({ type: 'ask', task_id: TASK_ID, ask_id: 'q2', question: 'And?' }, (m) => replies.push(m));
    expect(replies).toEqual([
      { type: 'answer', task_id: TASK_ID, ask_id: 'q2', error: 'another question is already waiting for an answer' },
    ]);
    expect(task.snapshot().pendingQuestion).toMatchObject({ askId: 'q1', question: 'Deploy?', choices: ['yes', 'no'] });
    expect(question.answer('q2', 'yes')).toBe(false);
    expect(question.answer('q1', 'yes')).toBe(true);
    expect(question.answer('q1', 'again')).toBe(false);
    expect(replies.at(-1)).toEqual({ type: 'answer', task_id: TASK_ID, ask_id: 'q1', answer: 'yes' });
    expect(task.snapshot()).not.toHaveProperty('pendingQuestion');
    expect(updates.map((u) => u.kind)).toEqual(['ask', 'answered']);
  });

  test('a question with choices takes a choice or its number, and refuses anything else while it goes on waiting', () => {
    const { task } = makeTask();
    const question = new PendingQuestion(task, 60_000);
    const replies: BrokerMessage[] = [];
    question.ask({ type: 'ask', task_id: TASK_ID, ask_id: 'q1', question: 'Deploy?', choices: ['yes', 'no'] }, (m) => replies.push(m));
    expect(() => question.answer('q1', 'maybe')).toThrow(
      expect.objectContaining({ code: 'invalid_request', message: '"maybe" is not one of the choices: 1. "yes", 2. "no"' }),
    );
    expect(replies).toEqual([]);
    expect(task.snapshot().pendingQuestion).toMatchObject({ askId: 'q1' });
    expect(question.answer('q1', '2')).toBe(true);
    expect(replies).toEqual([{ type: 'answer', task_id: TASK_ID, ask_id: 'q1', answer: 'no' }]);
  });

  test('an unanswered question times out with an error to the agent and a line in the log', () => {
    vi.useFakeTimers();
    try {
      const { task } = makeTask();
      const question = new PendingQuestion(task, 1000);
      const replies: BrokerMessage[] = [];
      question.ask({ type: 'ask', task_id: TASK_ID, ask_id: 'q1', question: 'Anyone?' }, (m) => replies.push(m));
      vi.advanceTimersByTime(1001);
      expect(replies).toEqual([{ type: 'answer', task_id: TASK_ID, ask_id: 'q1', error: 'nobody answered within 1000 ms' }]);
      expect(task.logLines().at(-1)?.text).toBe('question "Anyone?" timed out');
      expect(question.answer('q1', 'late')).toBe(false);
    } finally {
      vi.useRealTimers();
    }
  });

  test('a question from a task that already ended is refused at once: no timer, no pending question', () => {
    vi.useFakeTimers();
    try {
      const { task } = makeTask();
      task.startAttempt(1);
      task.fail('cancelled', 'was cancelled: the broker is shutting down');
      const question = new PendingQuestion(task, 60_000);
      const replies: BrokerMessage[] = [];
      question.ask({ type: 'ask', task_id: TASK_ID, ask_id: 'q1', question: 'Late?' }, (m) => replies.push(m));
      expect(replies).toEqual([{ type: 'answer', task_id: TASK_ID, ask_id: 'q1', error: 'the task has ended' }]);
      expect(vi.getTimerCount()).toBe(0);
      expect(task.snapshot()).not.toHaveProperty('pendingQuestion');
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('a retried attempt', () => {
  test('names no worker until it is placed: the previous attempt’s worker is not reported for it', () => {
    const { task } = makeTask(2);
    task.startAttempt(1);
    task.placed('q-w1');
    expect(task.snapshot().worker).toBe('q-w1');
    task.startAttempt(2);
    expect(task.snapshot()).toMatchObject({ attempt: 2 });
    expect(task.snapshot().worker).toBeUndefined();
    task.placed('q-w2');
    expect(task.snapshot().worker).toBe('q-w2');
  });
});
