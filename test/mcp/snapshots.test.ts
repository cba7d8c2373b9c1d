/** How a Backchannel task looks to an MCP client: the MCP Tasks status mapping and the tool summary. */
import { describe, expect, test } from 'vitest';
import type { TaskSnapshot } from '../../src/model/task.js';
import { taskSnapshot } from './task-snapshot.js';
import { snapshotUpdatedAt, summarize, toMcpTask } from '../../src/mcp/snapshots.js';

const snapshot = taskSnapshot;

describe('MCP Tasks status', () => {
  test.each([
    [{ state: 'queued' }, 'working', 'queued'],
    [{ state: 'running', progress: 40, lastPartial: { step: 'reading files' } }, 'working', '40% · reading files'],
    [{ state: 'retrying' }, 'working', 'retrying'],
    [
      { state: 'running', pendingQuestion: { askId: 'a', question: 'Which?', askedAt: '' } },
      'input_required',
      'The sub-agent asks: Which?',
    ],
    [
      { state: 'running', progress: 40, pendingToolCalls: [{ callId: 'c1', name: 'Write', arguments: {}, calledAt: '' }] },
      'working',
      'waiting for Write',
    ],
    [{ state: 'succeeded' }, 'completed', undefined],
    [{ state: 'failed', reason: 'timeout', message: 'timed out' }, 'failed', 'timed out'],
    [{ state: 'failed', reason: 'crashed', message: 'exited 1' }, 'failed', 'exited 1'],
    [{ state: 'interrupted', reason: 'crashed', message: 'the broker stopped' }, 'failed', 'the broker stopped'],
    [{ state: 'cancelled', reason: 'cancelled', message: 'cancelled' }, 'cancelled', 'cancelled'],
  ] as const)('%o → %s', (fields, status, message) => {
    const backchannel = snapshot(fields as Partial<TaskSnapshot>);
    const task = toMcpTask(backchannel, { ttl: null, lastUpdatedAt: snapshotUpdatedAt(backchannel) });
    expect(task.status).toBe(status);
    expect(task.statusMessage).toBe(message);
    expect(task.taskId).toBe('01a2-task');
  });
});

describe('tool summary', () => {
  test("a success carries the payload's data; a failure its reason, message and stderr tail", () => {
    const ok = summarize(
      snapshot({ state: 'succeeded', result: { task_id: 'x', status: 'success', data: { n: 1 }, meta: { timestamp: '' } } }),
    );
    expect(ok).toMatchObject({ done: true, result: { n: 1 } });
    expect(ok.failure).toBeUndefined();
    const failed = summarize(snapshot({ state: 'failed', reason: 'error', message: 'bad input', stderrTail: 'trace' }));
    expect(failed).toMatchObject({ done: true, failure: { reason: 'error', message: 'bad input', stderr_tail: 'trace' } });
    const running = summarize(snapshot({ progress: 10, lastPartial: { step: 's' } }));
    expect(running).toMatchObject({ done: false, progress: 10, last_partial: { step: 's' } });
    expect(running.waiting).toBeUndefined();
  });

  test("a task waiting on its caller's tools says which, each once", () => {
    const call = (callId: string, name: string) => ({ callId, name, arguments: {}, calledAt: '2026-12-05T08:00:00.000Z' });
    const waiting = summarize(snapshot({ pendingToolCalls: [call('c1', 'Read'), call('c2', 'Write'), call('c3', 'Read')] }));
    expect(waiting).toMatchObject({ done: false, waiting: 'waiting for Read, Write' });
  });

  test('get_task shows the usage so far against the budget, live while the task runs', () => {
    const running = summarize(snapshot({ usage: { input: 90, output: 60, costUsd: 0.03 }, budget: { maxTokens: 120 } }));
    expect(running).toMatchObject({
      done: false,
      usage: { input_tokens: 90, output_tokens: 60, tokens: 150, cost_usd: 0.03 },
      budget: { max_tokens: 120 },
    });
    const stopped = summarize(snapshot({ state: 'failed', reason: 'budget_exceeded', message: 'over budget: used 150 tokens' }));
    expect(stopped.failure).toMatchObject({ reason: 'budget_exceeded' });
  });

  test('a task stopped at its deadline keeps what it produced: partial_result beside the failure (issue 47 §2)', () => {
    const result = {
      task_id: 't',
      status: 'cancelled' as const,
      data: { message: 'timed out' },
      attachments: [{ name: 'draft.md', bytes: 9, encoding: 'utf8' as const }],
    };
    const stopped = summarize(
      snapshot({
        state: 'failed',
        reason: 'timeout',
        message: 'timed out after 500 ms',
        progress: 40,
        lastPartial: { text: 'half' },
        result,
      }),
    );
    expect(stopped).toMatchObject({ done: true, failure: { reason: 'timeout' } });
    expect(stopped.partial_result).toEqual({
      data: { text: 'half' },
      progress: 40,
      answer: { status: 'cancelled', data: { message: 'timed out' } },
      attachments: [{ name: 'draft.md', bytes: 9, encoding: 'utf8' }],
    });
    // An agent's own error is not a stop: nothing was cut short.
    expect(
      summarize(snapshot({ state: 'failed', reason: 'error', message: 'failed: x', lastPartial: { text: 'half' } })).partial_result,
    ).toBeUndefined();
  });
});
