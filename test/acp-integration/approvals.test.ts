/**
 * An approval question (an ACP agent's permission request, as the adapter asks it) across the doors:
 * the protocol refuses a malformed approval; the pending question keeps it; the notification says
 * "needs approval: <tool> <target>"; `show` prints what it is for, and `answer` takes an option by
 * name, number or id — against a real hub started with `serve`.
 */
import { describe, expect, it, test } from 'vitest';
import { agentMessageProblem } from '../../src/protocol/index.js';
import { questionNotice } from '../../src/model/notices.js';
import { choiceAnswer, questionContext } from '../../src/model/questions.js';
import type { PendingQuestion, TaskSnapshot } from '../../src/model/task.js';
import { waitFor } from '../helpers/core.js';
import { startTask, startBroker } from '../helpers/broker.js';
import { cli, hubEnv, startHub } from '../hub/control/hub-process.js';
import path from 'node:path';

const APPROVER = path.resolve('test/acp-integration/fixtures/approver.mjs');

const APPROVAL: NonNullable<PendingQuestion['approval']> = {
  tool_call_id: 'call-1',
  kind: 'execute',
  title: 'Run tests',
  command: 'npm test',
  options: [
    { option_id: 'allow-once', name: 'Allow once', kind: 'allow_once' },
    { option_id: 'reject-once', name: 'Reject', kind: 'reject_once' },
  ],
};

describe('an approval question', () => {
  it('is checked on the wire: options and fields of the right types only', () => {
    const ask = { type: 'ask', task_id: 't', ask_id: 'a', question: 'q' };
    expect(agentMessageProblem({ ...ask, approval: APPROVAL })).toBeUndefined();
    expect(agentMessageProblem({ ...ask, approval: 'yes' })).toBe('ask "approval" must be an object');
    expect(agentMessageProblem({ ...ask, approval: { ...APPROVAL, options: [] } })).toMatch(
      /approval.options" must be an array of 1 to 16/,
    );
    expect(agentMessageProblem({ ...ask, approval: { ...APPROVAL, locations: [1] } })).toBe(
      'ask "approval.locations" must be an array of strings',
    );
    expect(agentMessageProblem({ ...ask, approval: { ...APPROVAL, options: [{ name: 'x' }] } })).toMatch(/option_id/);
  });

  it('is answered by an option’s name, number or id, and says what it is for', () => {
    const question = { choices: ['Allow once', 'Reject'], approval: APPROVAL };
    expect(choiceAnswer(question, 'reject')).toEqual({ answer: 'Reject' });
    expect(choiceAnswer(question, '1')).toEqual({ answer: 'Allow once' });
    expect(choiceAnswer(question, 'reject-once')).toEqual({ answer: 'Reject' });
    expect(choiceAnswer(question, 'maybe')).toEqual({ refused: '"maybe" is not one of the choices: 1. "Allow once", 2. "Reject"' });
    expect(questionContext(question)).toBe('execute tool call: Run tests; target: npm test');
  });

  it('makes a "needs approval" notification that opens its task and offers the options', () => {
    const task = {
      id: 'task-1',
      label: 'claude (ACP agent)',
      state: 'running',
      pendingQuestion: {
        askId: 'a1',
        question: 'needs approval: Run tests npm test',
        choices: ['Allow once', 'Reject'],
        askedAt: '',
        approval: APPROVAL,
      },
    } as unknown as TaskSnapshot;
    expect(questionNotice(task)).toMatchObject({
      taskId: 'task-1',
      kind: 'needs_input',
      title: 'Needs approval: claude (ACP agent)',
      body: 'needs approval: Run tests npm test\nexecute tool call: Run tests; target: npm test',
      answers: { askId: 'a1', choices: ['Allow once', 'Reject'] },
    });
  });

  it('is kept on the pending question by the broker, and the picked option reaches the agent', async () => {
    const { broker, close } = await startBroker();
    try {
      const running = startTask(broker, { command: APPROVER }, (update, handle) => {
        const question = update.kind === 'ask' ? handle.snapshot().pendingQuestion : undefined;
        if (question) {
          expect(question.approval).toMatchObject({ tool_call_id: 'call-1', kind: 'edit', locations: ['/work/notes.md'] });
          broker.answer(handle.id, question.askId, 'always allow', 'panel');
        }
      });
      const done = await running.done;
      expect(done.payload?.data).toEqual({ option: 'allow-always', via: 'panel' });
      // The decision, its door and its time are kept with the result (history keeps the result).
      expect(done.payload?.meta?.approval_answers).toEqual([
        { tool_call_id: 'call-1', option_id: 'allow-always', via: 'panel', at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) },
      ]);
      // The decision's door is in the task's log too.
      expect(done.snapshot.log?.map((line) => line.text) ?? broker.logOf(done.handle.id).map((line) => line.text)).toContain(
        'approval "Always allow" answered via panel',
      );
    } finally {
      await close();
    }
  });
});

describe('approvals from the terminal', { timeout: 120_000 }, () => {
  test('show says what the approval is for, and answer takes the option by its id', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const id = (await cli(['run', '--detach', '--', APPROVER], hub.env)).stdout.trim();
    await waitFor(async () => {
      const { stdout } = await cli(['tasks', '--json'], hub.env);
      return (JSON.parse(stdout) as TaskSnapshot[]).find((t) => t.id === id)?.pendingQuestion;
    }, 'the approval');
    const shown = await cli(['show', id], hub.env);
    expect(shown.stdout).toMatch(/question\s+needs approval: Write notes.md \/work\/notes.md/);
    expect(shown.stdout).toMatch(/context\s+edit tool call: Write notes.md; target: \/work\/notes.md/);
    expect(shown.stdout).toMatch(/choices\s+1\. "Allow once", 2\. "Always allow", 3\. "Reject"/);
    const json = JSON.parse((await cli(['show', '--json', id], hub.env)).stdout) as { task: TaskSnapshot };
    expect(json.task.pendingQuestion?.approval?.options.map((o) => o.option_id)).toEqual(['allow-once', 'allow-always', 'reject-once']);

    expect((await cli(['answer', id, 'reject-once'], hub.env)).code).toBe(0);
    const waited = await cli(['wait', '--json', id], hub.env);
    expect(JSON.parse(waited.stdout)).toMatchObject({ data: { option: 'reject-once', via: 'cli' } });
  });
});
