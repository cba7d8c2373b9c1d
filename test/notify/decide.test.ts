/**
 * The one notification decision (src/notify/events.ts) and what a person's notification shows of it
 * (src/notify/notices.ts), shared by the desktop app and the browser panel, and fed by the hub's
 * notifications (src/notify/index.ts) as the hub assembly feeds them: every update of real tasks from
 * a real broker. One notice per ending, one per question, never "succeeded" while a task waits (on a
 * question or on its caller's tool calls); `budget_exceeded` follows its task's `ended`.
 */
import { describe, expect, test } from 'vitest';
import type { Notice } from '../../src/model/notices.js';
import type { TaskSnapshot, ToolDefinition } from '../../src/model/task.js';
import type { TaskBroker } from '../../src/broker/index.js';
import { silentLogger } from '../../src/broker/log.js';
import { NotifyDecider, type TaskAnnouncement } from '../../src/notify/events.js';
import { Notifications, type Announcement } from '../../src/notify/index.js';
import { noticeOf } from '../../src/notify/notices.js';
import { createTestBroker, fixture, waitFor } from '../helpers/core.js';

const task = (over: Partial<TaskSnapshot>): TaskSnapshot =>
  ({ id: 't1', label: 'refactor', state: 'running', createdAt: '2026-12-01T20:00:00.000Z', ...over }) as TaskSnapshot;

/** What a person's notification shows of some announcements. */
const shown = (news: readonly TaskAnnouncement[]): Notice[] => news.map(noticeOf).filter((n): n is Notice => n !== undefined);

/** The decider as a desktop or panel notification sees it: the notice a snapshot makes, if any. */
class Shown {
  constructor(readonly decider = new NotifyDecider()) {}
  next = (snapshot: TaskSnapshot): Notice | undefined => shown(this.decider.next(snapshot))[0];
  picture = (tasks: readonly TaskSnapshot[]): Notice[] => shown(this.decider.picture(tasks));
  known = (tasks: readonly TaskSnapshot[]): void => this.decider.known(tasks);
}

/** The hub's notifications over a broker, as the assembly makes them; what they announce and what a person sees, in order. */
function watch(broker: TaskBroker, told: Announcement[] = []): Notice[] {
  const notices: Notice[] = [];
  const notifications = new Notifications(broker, silentLogger);
  notifications.subscribe((announcement) => {
    told.push(announcement);
    const notice = noticeOf(announcement);
    if (notice) notices.push(notice);
  });
  return notices;
}

const node = process.execPath;
const READ: ToolDefinition = { name: 'Read', input_schema: { type: 'object' } };

describe('the hub’s notifications fed a real broker', () => {
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
    const told: Announcement[] = [];
    const notices = watch(broker, told);
    const handle = broker.submit({ command: fixture('spender.mjs'), label: 'spender', maxTokens: 120 });
    await handle.result.catch(() => undefined);
    await handle.finished;
    const snapshot = broker.get(handle.id)!;
    expect(snapshot.reason).toBe('budget_exceeded');
    expect(notices).toEqual([{ taskId: handle.id, kind: 'ended', title: 'Failed: spender', body: snapshot.message, silent: false }]);
    expect(snapshot.message).toMatch(/budget/);
    // Webhooks are told both: the ending, then that it was over budget.
    expect(told.map((a) => a.type)).toEqual(['ended', 'budget_exceeded']);
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

describe('NotifyDecider', () => {
  const asked = (askId: string, over: Partial<TaskSnapshot> = {}) =>
    task({ pendingQuestion: { askId, question: `question ${askId}`, askedAt: '2026-12-01T20:01:00.000Z' }, ...over });

  test('each new question of a task is news once; the same question again is not', () => {
    const decider = new Shown();
    expect(decider.next(asked('q1'))?.body).toBe('question q1');
    expect(decider.next(asked('q1'))).toBeUndefined();
    expect(decider.next(task({}))).toBeUndefined();
    expect(decider.next(asked('q2'))?.body).toBe('question q2');
  });

  test('a finished snapshot that still carries a question says how it ended, not that it needs an answer', () => {
    expect(new Shown().next(asked('q1', { state: 'failed', message: 'timed out' }))).toMatchObject({ title: 'Failed: refactor' });
  });

  test('tasks known from the first picture tell only what changes after', () => {
    const decider = new Shown();
    decider.known([task({ id: 'old', state: 'succeeded' }), asked('q1', { id: 'waiting' }), task({ id: 'busy' })]);
    expect(decider.next(task({ id: 'old', state: 'succeeded' }))).toBeUndefined();
    expect(decider.next(asked('q1', { id: 'waiting' }))).toBeUndefined();
    expect(decider.next(asked('q2', { id: 'waiting' }))?.title).toBe('Needs an answer: refactor');
    expect(decider.next(task({ id: 'busy', state: 'failed', message: 'boom' }))?.body).toBe('boom');
  });

  test('the first full picture is all known; a later one tells what changed for tasks seen before, not for strangers', () => {
    const decider = new Shown();
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
    const decider = new Shown(new NotifyDecider(2));
    for (const id of ['a', 'b', 'c']) expect(decider.next(task({ id, state: 'succeeded' }))).toBeDefined();
    expect(decider.next(task({ id: 'c', state: 'succeeded' }))).toBeUndefined();
    expect(decider.next(task({ id: 'b', state: 'succeeded' }))).toBeUndefined();
    expect(decider.next(task({ id: 'a', state: 'succeeded' }))).toBeDefined();
  });
});

describe('Notifications', () => {
  const approval = (askId: string) =>
    task({
      pendingQuestion: {
        askId,
        question: 'needs approval: Write notes.md /work/notes.md',
        askedAt: '2026-12-01T20:01:00.000Z',
        approval: { tool_call_id: 'call-1', kind: 'edit', title: 'Write notes.md', locations: ['/work/notes.md'], options: [] },
      },
    });

  test('an ACP approval is a needs_input announcement marked as one, and its notice says "Needs approval"', () => {
    const [news] = new NotifyDecider().next(approval('a1'));
    expect(news).toMatchObject({ type: 'needs_input', askId: 'a1', approval: true });
    expect(noticeOf(news!)?.title).toBe('Needs approval: refactor');
    expect(new NotifyDecider().next(task({ pendingQuestion: { askId: 'q', question: '?', askedAt: 'x' } }))[0]).toMatchObject({
      approval: false,
    });
  });

  test('every subscriber is told, in order; one that throws is logged and the others are still told; close stops all', () => {
    const listeners = new Set<(update: { kind: string; taskId: string }) => void>();
    const snapshots = new Map<string, TaskSnapshot>();
    const source = {
      on: (_: 'update', listener: (update: never) => void) => listeners.add(listener as never),
      off: (_: 'update', listener: (update: never) => void) => listeners.delete(listener as never),
      get: (id: string) => snapshots.get(id),
    };
    const errors: string[] = [];
    const notifications = new Notifications(source, { ...silentLogger, error: (text: unknown) => errors.push(String(text)) });
    const told: string[] = [];
    notifications.subscribe(() => {
      throw new Error('a broken channel');
    });
    const unsubscribe = notifications.subscribe((a) => told.push(a.type === 'schedule_skipped' ? a.skip.schedule : a.task.id));
    snapshots.set('t1', task({ state: 'succeeded' }));
    for (const listener of listeners) listener({ kind: 'ended', taskId: 't1' });
    notifications.scheduleSkipped({ schedule: 'nightly', at: 1, reason: 'overlap' });
    expect(told).toEqual(['t1', 'nightly']);
    expect(errors).toEqual(['notify: a subscriber failed on ended:', 'notify: a subscriber failed on schedule_skipped:']);
    unsubscribe();
    notifications.scheduleSkipped({ schedule: 'again', at: 2, reason: 'overlap' });
    expect(told).toEqual(['t1', 'nightly']);
    notifications.close();
    expect(listeners.size).toBe(0);
  });
});
