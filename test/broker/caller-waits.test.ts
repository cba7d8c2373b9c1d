/**
 * Y4 (issue 47): a run waiting on its caller's tool result does not hold a slot of the queue. With
 * concurrency 1, an agent waiting on a tool call its caller has not answered (a client at a
 * permission prompt) lends its slot: the owner's next task starts and succeeds meanwhile; once the
 * call is answered the slot is taken back. Real agent processes.
 */
import { describe, expect, test } from 'vitest';
import type { ToolDefinition } from '../../src/model/task.js';
import { CallerWaits } from '../../src/broker/queue/caller-waits.js';
import type { TaskUpdate } from '../../src/model/task.js';
import { createTestBroker, fixture, waitFor } from '../helpers/core.js';

const READ: ToolDefinition = { name: 'Read', input_schema: { type: 'object' } };

describe('runs waiting on their caller (Y4)', () => {
  test('an agent waiting on its caller’s tool result lends its slot: the next task runs meanwhile, then the slot is back', async () => {
    const { broker } = createTestBroker({ concurrency: 1 });
    const waiting = broker.submit({
      command: process.execPath,
      args: [fixture('raw-tool-caller.mjs')],
      input: { name: 'Read', arguments: { path: 'a' } },
      tools: [READ],
    });
    const [call] = await waitFor(() => broker.get(waiting.id)?.pendingToolCalls, 'the tool call');
    // The owner's own task, queued behind a run that waits on a client nobody answers.
    const mine = broker.submit({ command: process.execPath, args: [fixture('quick.mjs')] });
    await mine.result;
    expect(broker.get(waiting.id)?.state).toBe('running');
    // The call answered, the slot is the waiting run's again: a third task waits for it to end.
    expect(broker.answerToolCall(waiting.id, call!.callId, { content: 'text of a' })).toBe(true);
    await waiting.result;
    const after = broker.submit({ command: process.execPath, args: [fixture('quick.mjs')] });
    await after.result;
    await Promise.all([waiting.finished, mine.finished, after.finished]);
  });

  test('at most as many slots are lent as the concurrency: a second waiting run holds its slot', async () => {
    const { broker } = createTestBroker({ concurrency: 1 });
    const caller = (path: string) =>
      broker.submit({
        command: process.execPath,
        args: [fixture('raw-tool-caller.mjs')],
        input: { name: 'Read', arguments: { path } },
        tools: [READ],
      });
    const first = caller('a');
    await waitFor(() => broker.get(first.id)?.pendingToolCalls, 'the first call');
    const second = caller('b');
    const [call] = await waitFor(() => broker.get(second.id)?.pendingToolCalls, 'the second call (in the lent slot)');
    const third = broker.submit({ command: process.execPath, args: [fixture('quick.mjs')] });
    // Two runs wait on callers, one slot was lent: the third task stays queued until a call is answered.
    await waitFor(() => broker.get(second.id)?.state === 'running', 'the second run');
    expect(broker.get(third.id)?.state).toBe('queued');
    broker.answerToolCall(second.id, call!.callId, { content: 'b' });
    await second.result;
    await third.result;
    const [firstCall] = broker.get(first.id)!.pendingToolCalls!;
    broker.answerToolCall(first.id, firstCall!.callId, { content: 'a' });
    await first.result;
    await Promise.all([first.finished, second.finished, third.finished]);
  });

  test('a run that starts (or waits to retry) with no slot lent is not looked at: its calls were dropped with its last attempt', () => {
    const queue = { concurrency: 2 };
    const looked: string[] = [];
    let waits = true;
    const waitsFor = new CallerWaits(queue, 2, (id) => (looked.push(id), waits));
    const update = (taskId: string, kind: TaskUpdate['kind']) => ({ taskId, kind }) as TaskUpdate;
    waitsFor.observe(update('a', 'started'));
    waitsFor.observe(update('a', 'retrying'));
    expect(looked).toEqual([]);
    // A call lends the slot; its answer, a retry and the next start are looked at while it is lent.
    waitsFor.observe(update('a', 'tool_call'));
    expect([queue.concurrency, waitsFor.lent]).toEqual([3, 1]);
    waits = false;
    waitsFor.observe(update('a', 'retrying'));
    expect(looked).toEqual(['a', 'a']);
    expect([queue.concurrency, waitsFor.lent]).toEqual([2, 0]);
  });
});
