/**
 * Which task changes notify, and in which words (src/model/notices.ts), shared by the desktop app and
 * the browser panel. First the words of single snapshots, then the decider fed every update of real
 * tasks from a real broker: one notice per ending, one per question, never "succeeded" while a task
 * waits (on a question or on its caller's tool calls).
 */
import { describe, expect, test } from 'vitest';
import { endedNotice, NoticeDecider, questionNotice, type Notice } from '../../src/model/notices.js';
import type { TaskSnapshot, TaskUpdate, ToolDefinition } from '../../src/model/task.js';
import type { TaskBroker } from '../../src/broker/index.js';
import { createTestBroker, fixture, waitFor } from '../helpers/core.js';

const task = (over: Partial<TaskSnapshot>): TaskSnapshot =>
  ({ id: 't1', label: 'refactor', state: 'running', createdAt: '2026-12-01T20:00:00.000Z', ...over }) as TaskSnapshot;

describe('questionNotice', () => {
  test('a coding task’s question names its branch and the files it changed so far, with a reply field', () => {
    const notice = questionNotice(
      task({
        pendingQuestion: {
          askId: 'q1',
          question: 'Rename the helper too?',
          askedAt: '2026-12-01T20:01:00.000Z',
          worktree: { branch: 'backchannel/01a2327f0000', files: ['src/app.ts', 'README.md'] },
        },
      }),
    );
    expect(notice).toEqual({
      taskId: 't1',
      kind: 'needs_input',
      title: 'Needs an answer: refactor',
      body: 'Rename the helper too?\nOn branch backchannel/01a2327f0000; changed so far: src/app.ts, README.md',
      silent: false,
      answers: { askId: 'q1', reply: true },
    });
  });

  test('a question with choices offers them as the answers; one without a worktree is the question alone', () => {
    const notice = questionNotice(
      task({ pendingQuestion: { askId: 'q2', question: 'Which branch?', choices: ['main', 'dev'], askedAt: '2026-12-01T20:01:00.000Z' } }),
    );
    expect(notice).toMatchObject({ body: 'Which branch?', answers: { askId: 'q2', choices: ['main', 'dev'] } });
  });

  test('a coding task that changed nothing yet says so', () => {
    const notice = questionNotice(
      task({
        pendingQuestion: {
          askId: 'q3',
          question: 'Start?',
          askedAt: '2026-12-01T20:01:00.000Z',
          worktree: { branch: 'backchannel/x', files: [] },
        },
      }),
    );
    expect(notice?.body).toBe('Start?\nOn branch backchannel/x; changed so far: nothing');
  });

  test('no question, no notice', () => {
    expect(questionNotice(task({}))).toBeUndefined();
  });
});

describe('endedNotice', () => {
  test('a success is quiet; a failure says why, loudly; the title says which', () => {
    expect(endedNotice(task({ state: 'succeeded' }))).toMatchObject({ kind: 'ended', title: 'Succeeded: refactor', silent: true });
    expect(endedNotice(task({ state: 'failed', reason: 'crashed', message: 'exited with code 3' }))).toMatchObject({
      title: 'Failed: refactor',
      body: 'exited with code 3',
      silent: false,
    });
  });

  test('a cancelled task says cancelled, an interrupted one failed; a task still working makes none', () => {
    expect(endedNotice(task({ state: 'cancelled', message: 'cancelled by the user' }))?.title).toBe('Cancelled: refactor');
    expect(endedNotice(task({ state: 'interrupted', message: 'the broker stopped' }))?.title).toBe('Failed: refactor');
    for (const state of ['queued', 'running', 'retrying'] as const) expect(endedNotice(task({ state }))).toBeUndefined();
  });
});

/** Every update of the broker's tasks goes through one decider, as the app feeds it; the notices it makes, in order. */
function watch(broker: TaskBroker): Notice[] {
  const decider = new NoticeDecider();
  const notices: Notice[] = [];
  broker.on('update', (update: TaskUpdate) => {
    const snapshot = broker.get(update.taskId);
    const notice = snapshot && decider.next(snapshot);
    if (notice) notices.push(notice);
  });
  return notices;
}

const node = process.execPath;
const READ: ToolDefinition = { name: 'Read', input_schema: { type: 'object' } };

describe('NoticeDecider fed a real broker', () => {
  test('a question makes one "needs an answer" notice and no ending while it waits; the answer, one "succeeded"', async () => {
    const { broker } = createTestBroker();
    const notices = watch(broker);
    const handle = broker.submit({ command: node, args: [fixture('asker.mjs')], label: 'asker' });
    const question = await waitFor(() => broker.get(handle.id)?.pendingQuestion, 'the question');
    await waitFor(() => notices.length > 0, 'the notice');
    expect(notices).toEqual([
      {
        taskId: handle.id,
        kind: 'needs_input',
        title: 'Needs an answer: asker',
        body: 'Which branch should I use?',
        silent: false,
        answers: { askId: question.askId, choices: ['main', 'dev'] },
      },
    ]);
    expect(broker.answer(handle.id, question.askId, 'dev')).toBe(true);
    await handle.result;
    await handle.finished; // the exited update too: it tells nothing new
    expect(notices.map((n) => n.title)).toEqual(['Needs an answer: asker', 'Succeeded: asker']);
    expect(notices[1]).toMatchObject({ kind: 'ended', silent: true });
  });

  test('a failed task makes one "failed" notice with its message, however many updates follow', async () => {
    const { broker } = createTestBroker();
    const notices = watch(broker);
    const handle = broker.submit({ command: fixture('crash.mjs'), label: 'crasher' });
    await handle.result.catch(() => undefined);
    await handle.finished;
    const snapshot = broker.get(handle.id)!;
    expect(notices).toEqual([{ taskId: handle.id, kind: 'ended', title: 'Failed: crasher', body: snapshot.message, silent: false }]);
  });

  test('a cancelled task makes one "cancelled" notice and never a "succeeded"', async () => {
    const { broker } = createTestBroker();
    const notices = watch(broker);
    const handle = broker.submit({ command: node, args: [fixture('asker.mjs')], label: 'stopped' });
    await waitFor(() => broker.get(handle.id)?.pendingQuestion, 'the question');
    broker.cancel(handle.id);
    await handle.result.catch(() => undefined);
    await handle.finished;
    expect(notices.map((n) => n.title)).toEqual(['Needs an answer: stopped', 'Cancelled: stopped']);
  });

  test('a failed attempt that is retried makes no notice; the task’s one ending does', async () => {
    const { broker } = createTestBroker();
    const notices = watch(broker);
    const retried: string[] = [];
    const handle = broker.submit({ command: node, args: [fixture('flaky.mjs')], label: 'flaky', retries: { max: 1, backoffMs: 10 } });
    handle.on('update', (update) => update.kind === 'retrying' && retried.push(`${notices.length}`));
    await handle.result;
    await handle.finished;
    expect(retried).toEqual(['0']); // it was retried, with nothing notified by then
    expect(notices.map((n) => n.title)).toEqual(['Succeeded: flaky']);
  });

  test('a task stopped over its budget makes one "failed" notice that says so', async () => {
    const { broker } = createTestBroker();
    const notices = watch(broker);
    const handle = broker.submit({ command: fixture('spender.mjs'), label: 'spender', maxTokens: 120 });
    await handle.result.catch(() => undefined);
    await handle.finished;
    const snapshot = broker.get(handle.id)!;
    expect(snapshot.reason).toBe('budget_exceeded');
    expect(notices).toEqual([{ taskId: handle.id, kind: 'ended', title: 'Failed: spender', body: snapshot.message, silent: false }]);
    expect(snapshot.message).toMatch(/budget/);
  });

  test('a task waiting on its caller’s tool calls makes no notice until it ends, then one "succeeded"', async () => {
    const { broker } = createTestBroker();
    const notices = watch(broker);
    const calls = [{ name: 'Read', arguments: { path: 'a' } }];
    const handle = broker.submit({ command: node, args: [fixture('tool-caller.mjs')], input: { calls }, tools: [READ], label: 'tooler' });
    const [call] = await waitFor(() => broker.get(handle.id)?.pendingToolCalls, 'the tool call');
    expect(notices).toEqual([]);
    expect(broker.answerToolCall(handle.id, call!.callId, { content: 'text of a' })).toBe(true);
    await handle.result;
    await handle.finished;
    expect(notices.map((n) => n.title)).toEqual(['Succeeded: tooler']);
  });
});

describe('NoticeDecider', () => {
  const asked = (askId: string, over: Partial<TaskSnapshot> = {}) =>
    task({ pendingQuestion: { askId, question: `question ${askId}`, askedAt: '2026-12-01T20:01:00.000Z' }, ...over });

  test('each new question of a task is news once; the same question again is not', () => {
    const decider = new NoticeDecider();
    expect(decider.next(asked('q1'))?.body).toBe('question q1');
    expect(decider.next(asked('q1'))).toBeUndefined();
    expect(decider.next(task({}))).toBeUndefined();
    expect(decider.next(asked('q2'))?.body).toBe('question q2');
  });

  test('a finished snapshot that still carries a question says how it ended, not that it needs an answer', () => {
    expect(new NoticeDecider().next(asked('q1', { state: 'failed', message: 'timed out' }))).toMatchObject({ title: 'Failed: refactor' });
  });

  test('tasks known from the first picture tell only what changes after', () => {
    const decider = new NoticeDecider();
    decider.known([task({ id: 'old', state: 'succeeded' }), asked('q1', { id: 'waiting' }), task({ id: 'busy' })]);
    expect(decider.next(task({ id: 'old', state: 'succeeded' }))).toBeUndefined();
    expect(decider.next(asked('q1', { id: 'waiting' }))).toBeUndefined();
    expect(decider.next(asked('q2', { id: 'waiting' }))?.title).toBe('Needs an answer: refactor');
    expect(decider.next(task({ id: 'busy', state: 'failed', message: 'boom' }))?.body).toBe('boom');
  });

  test('the first full picture is all known; a later one tells what changed for tasks seen before, not for strangers', () => {
    const decider = new NoticeDecider();
    expect(decider.picture([task({ id: 'old', state: 'failed' }), asked('q1', { id: 'waiting' }), task({ id: 'busy' })])).toEqual([]);
    const later = decider.picture([
      task({ id: 'old', state: 'failed' }),
      task({ id: 'waiting', state: 'succeeded' }),
      asked('q9', { id: 'busy' }),
      task({ id: 'stranger', state: 'succeeded' }),
    ]);
    expect(later.map((n) => [n.taskId, n.title])).toEqual([
      ['waiting', 'Succeeded: refactor'],
      ['busy', 'Needs an answer: refactor'],
    ]);
    expect(decider.next(task({ id: 'stranger', state: 'succeeded' }))).toBeUndefined();
  });

  test('memory is bounded: the oldest task is forgotten first, the newest remembered', () => {
    const decider = new NoticeDecider(2);
    for (const id of ['a', 'b', 'c']) expect(decider.next(task({ id, state: 'succeeded' }))).toBeDefined();
    expect(decider.next(task({ id: 'c', state: 'succeeded' }))).toBeUndefined();
    expect(decider.next(task({ id: 'b', state: 'succeeded' }))).toBeUndefined();
    expect(decider.next(task({ id: 'a', state: 'succeeded' }))).toBeDefined();
  });
});
