/**
 * Finished work is never thrown away (issue 47 §2): a task the broker stops — its deadline, its
 * watchdog, its budget, a cancel — ends with what its agent had produced: its last partial, its
 * answer to the stop with that answer's attachments, a coding task's change (`PartialResult`).
 * And a final report over the budget ends `budget_exceeded` with the result kept (issue 46 §4).
 */
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import type { TaskError } from '../../src/broker/index.js';
import { partialResultOf } from '../../src/model/states.js';
import { createTestBroker, fixture, isAlive, makeBroker, settle, tempDir } from '../helpers/core.js';
import { makeRepo } from '../helpers/git-repo.js';

async function failure(task: { result: Promise<unknown> }): Promise<TaskError> {
  const settled = await settle(task.result);
  if (settled.ok) throw new Error('the task succeeded');
  return settled.error as TaskError;
}

describe('a stopped task keeps what its agent produced', () => {
  test('at its deadline: the last partial, the answer to the cancel and its attachment reach the caller and history', async () => {
    const dataDir = path.join(tempDir(), 'data');
    const { broker } = createTestBroker({ dataDir });
    const task = broker.submit({ command: fixture('keeps-work.mjs'), timeoutMs: 1500 });
    const error = await failure(task);
    expect(error.reason).toBe('timeout');
    expect(error.partialResult).toMatchObject({
      data: { step: 'drafted', text: 'half a report', progress: 40 },
      progress: 40,
      answer: { status: 'cancelled' },
      attachments: [{ name: 'draft.md', encoding: 'utf8' }],
    });
    // The attachment's content comes with the failure, as a success's would.
    expect(error.payload?.attachments?.[0]?.content).toBe('# Draft\nhalf a report ✓\n');
    // Decided once its agent was gone: nothing of it runs when the caller hears of the failure.
    const snapshot = task.snapshot();
    expect(snapshot.state).toBe('failed');
    expect(snapshot.pid === undefined || !isAlive(snapshot.pid)).toBe(true);
    await task.finished;
    // History keeps it the same way (the journal's `ended` record).
    await broker.close();
    const again = createTestBroker({ dataDir }).broker;
    await again.ready;
    expect(partialResultOf(again.get(task.id)!)).toEqual(error.partialResult);
  });

  test('at a cancel of an agent that ignores it: its last partial is the partial result; nothing is retried', async () => {
    const { broker } = makeBroker();
    const task = broker.submit({ command: fixture('spender.mjs'), retries: 2 });
    await new Promise<void>((resolve) => {
      const off = task.on('update', (u) => {
        if (u.kind === 'partial' && (u.payload?.data as { step?: string } | undefined)?.step === 'step 2') {
          off();
          resolve();
        }
      });
    });
    task.cancel('enough');
    const error = await failure(task);
    expect(error.reason).toBe('cancelled');
    expect((error.partialResult?.data as { step: string }).step).toMatch(/^step \d+$/);
    expect(error.partialResult?.answer).toBeUndefined();
    expect(task.snapshot().attempt).toBe(1);
  });

  test('over its budget mid-run: the partial that went over and the answer are kept', async () => {
    const { broker } = makeBroker();
    const task = broker.submit({ command: fixture('keeps-work.mjs'), input: { tokens: 500 }, maxTokens: 100 });
    const error = await failure(task);
    expect(error.reason).toBe('budget_exceeded');
    expect(error.partialResult).toMatchObject({ data: { step: 'drafted' }, answer: { status: 'cancelled' } });
    expect(task.snapshot().usage).toMatchObject({ input: 500 });
  });

  test('a coding task stopped at its deadline keeps its change in the worktree, with the failure', async () => {
    const worktreeDir = path.join(tempDir('bc-wt-'), 'worktrees');
    const { broker } = createTestBroker({ worktreeDir });
    const repo = makeRepo();
    const input = { edits: [{ path: 'half.txt', content: 'half done\n' }], ask: 'go on?' };
    const task = broker.submit({ command: fixture('coder.mjs'), cwd: repo, worktree: true, timeoutMs: 1500, input, askTimeoutMs: 60_000 });
    const error = await failure(task);
    expect(error.reason).toBe('timeout');
    expect(error.partialResult?.data).toEqual({ step: 'editing half.txt' });
    expect(error.partialResult?.change?.files.map((f) => f.path)).toEqual(['half.txt']);
    expect(task.snapshot().change?.files.map((f) => f.path)).toEqual(['half.txt']);
    await task.finished;
  });

  test('a task that failed on its own has no partial result', async () => {
    const { broker } = makeBroker();
    const task = broker.submit({ command: fixture('crash.mjs') });
    const error = await failure(task);
    expect(error.partialResult).toBeUndefined();
  });
});

describe('a final report over the budget', () => {
  for (const [usage, budget] of [
    [{ input: 150, output: 70 }, 150],
    [{ input: 1e9, output: 0 }, 100],
  ] as const) {
    test(`${usage.input + usage.output} tokens reported with the result against maxTokens ${budget}: budget_exceeded, the result kept, not retried`, async () => {
      const { broker } = makeBroker();
      const task = broker.submit({ command: fixture('reports-at-end.mjs'), input: { usage }, maxTokens: budget, retries: 2 });
      const error = await failure(task);
      expect(error.reason).toBe('budget_exceeded');
      expect(error.message).toContain(`used ${usage.input + usage.output} tokens, over the budget of ${budget}`);
      expect(error.payload?.data).toEqual({ answer: 'done' });
      const snapshot = task.snapshot();
      expect(snapshot).toMatchObject({ state: 'failed', reason: 'budget_exceeded', attempt: 1 });
      expect(snapshot.result?.data).toEqual({ answer: 'done' });
      expect(snapshot.usage).toMatchObject(usage);
      expect(partialResultOf(snapshot)?.answer).toEqual({ status: 'success', data: { answer: 'done' } });
    });
  }

  test('a partial that reports only cost_usd is read and stops the task mid-run', async () => {
    const { broker } = makeBroker();
    const task = broker.submit({ command: fixture('huge-usage.mjs'), input: { report: { cost_usd: 0.5 } }, maxCostUsd: 0.25 });
    const error = await failure(task);
    expect(error.reason).toBe('budget_exceeded');
    expect(error.message).toContain('spent $0.5, over the budget of $0.25');
    expect(error.partialResult?.data).toEqual({ step: 'two' });
  });

  test('a final cost over maxCostUsd is over too; one within every limit succeeds', async () => {
    const { broker } = makeBroker();
    const over = await failure(broker.submit({ command: fixture('reports-at-end.mjs'), input: { cost: 0.5 }, maxCostUsd: 0.25 }));
    expect(over.reason).toBe('budget_exceeded');
    expect(over.payload?.data).toEqual({ answer: 'done' });
    const within = broker.submit({ command: fixture('reports-at-end.mjs'), input: { usage: { input: 10, output: 5 } }, maxTokens: 15 });
    expect((await within.result).data).toEqual({ answer: 'done' });
  });
});
