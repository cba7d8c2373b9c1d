import { describe, expect, test } from 'vitest';
import { foldTasks } from '../../src/broker/history/insights.js';
import type { TaskSnapshot } from '../../src/model/task.js';
import { addUsage, laterUsage, overBudget, reportedUsage } from '../../src/model/usage.js';

describe('usage', () => {
  test.each([
    ['the protocol’s meta.token_usage', { token_usage: { input: 3, output: 4 } }, undefined, { input: 3, output: 4 }],
    ['OpenAI names in meta.usage', { usage: { prompt_tokens: 3, completion_tokens: 4 } }, undefined, { input: 3, output: 4 }],
    ['Anthropic names in data.usage', {}, { usage: { input_tokens: 3, output_tokens: 4 } }, { input: 3, output: 4 }],
    [
      'docs/gateway.md’s example: data.usage with prompt/completion tokens',
      {},
      { usage: { prompt_tokens: 12, completion_tokens: 2 } },
      { input: 12, output: 2 },
    ],
    ['only a total', { token_usage: { total: 9 } }, undefined, { input: 0, output: 9 }],
    [
      'Claude Code’s total_cost_usd and num_turns',
      { total_cost_usd: 0.5, num_turns: 3 },
      undefined,
      { input: 0, output: 0, costUsd: 0.5, turns: 3 },
    ],
  ])('reads %s', (_name, meta, data, expected) => {
    expect(reportedUsage(meta, data)).toEqual(expected);
  });

  test('a payload reporting nothing has no usage', () => {
    expect(reportedUsage({ timestamp: 'x' }, { text: 'hi' })).toBeUndefined();
    expect(reportedUsage(undefined, 'text')).toBeUndefined();
  });

  test('a later report replaces an earlier one and never takes spending back; attempts add up', () => {
    const first = { input: 30, output: 20, costUsd: 0.01 };
    expect(laterUsage(first, { input: 60, output: 10 })).toEqual({ input: 60, output: 20, costUsd: 0.01 });
    expect(addUsage(first, { input: 1, output: 2, turns: 1 })).toEqual({ input: 31, output: 22, costUsd: 0.01, turns: 1 });
  });

  test('over budget says which limit and by how much; within it says nothing', () => {
    expect(overBudget({ input: 90, output: 60 }, { maxTokens: 120 })).toBe('used 150 tokens, over the budget of 120');
    expect(overBudget({ input: 60, output: 60 }, { maxTokens: 120 })).toBeUndefined();
    expect(overBudget({ input: 0, output: 0, turns: 4 }, { maxTurns: 3 })).toBe('took 4 turns, over the budget of 3');
    // A cost limit with no cost reported is not exceeded.
    expect(overBudget({ input: 5, output: 5 }, { maxCostUsd: 0.01 })).toBeUndefined();
  });

  test('stats count the tokens of an agent that reports usage as docs/gateway.md shows (issue 38 item 10)', () => {
    const task: TaskSnapshot = {
      id: 't1',
      label: 'gw',
      state: 'succeeded',
      command: 'node',
      args: ['agent.mjs'],
      cwd: '/',
      attempt: 1,
      maxAttempts: 1,
      createdAt: '2026-12-01T10:00:00.000Z',
      startedAt: '2026-12-01T10:00:00.000Z',
      endedAt: '2026-12-01T10:00:01.000Z',
      result: { task_id: 't1', status: 'success', data: { text: 'Hello', usage: { prompt_tokens: 12, completion_tokens: 2 } }, meta: {} },
      counters: { malformed: 0, rejected: 0, ignored: 0 },
    };
    const [bucket] = [...foldTasks([task]).values()];
    expect(bucket).toMatchObject({ tokensIn: 12, tokensOut: 2 });
  });
});
