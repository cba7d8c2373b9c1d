import { describe, expect, test } from 'vitest';
import { makeBroker } from '../helpers/core.js';
import { runTask } from '../helpers/broker.js';
import { acpCase, script } from './acp-helpers.js';

describe('the ACP adapter maps what the agent does onto the task', () => {
  test('text, thoughts, tool calls, plan and usage become the result, the step text, progress and live usage', async () => {
    const { broker } = makeBroker();
    const acp = acpCase();
    const steps = [
      { think: 'Let me look.' },
      {
        plan: [
          ['read the code', 'completed'],
          ['change it', 'in_progress'],
          ['test it', 'pending'],
          ['ship', 'pending'],
        ],
      },
      { tool: { id: 't1', title: 'Read src/a.ts', kind: 'read', paths: ['src/a.ts'], status: 'in_progress' } },
      { usage: { cost: 0.25, used: 1200 } },
      { toolUpdate: { id: 't1', status: 'completed' } },
      { say: 'Hello, ' },
      { say: 'world.' },
    ];
    const done = await runTask(broker, acp.spec(script(steps)));
    expect(done.error).toBeUndefined();
    const data = done.payload!.data as Record<string, any>;
    expect(data.text).toBe('Hello, world.');
    expect(data.thoughts).toBe('Let me look.');
    expect(data.stop_reason).toBe('end_turn');
    expect(data.session_id).toMatch(/^s-/);
    expect(data.tool_calls).toEqual([
      { id: 't1', kind: 'read', title: 'Read src/a.ts', status: 'completed', locations: [`${acp.cwd}/src/a.ts`] },
    ]);
    expect(data.plan).toHaveLength(4);
    const meta = done.payload!.meta as Record<string, any>;
    expect(meta.cost_usd).toBe(0.25);
    expect(meta.acp).toMatchObject({ session_id: data.session_id, stop_reason: 'end_turn', ignored_updates: 0 });
    // Live: the step text from the tool call, the plan's progress, the usage as it came.
    const steps_ = done.partials.map((p) => (p.data as { step?: string }).step);
    expect(steps_).toContain('Read src/a.ts');
    expect(done.partials.some((p) => (p.data as { progress?: number }).progress === 25)).toBe(true);
    expect(done.partials.some((p) => (p.meta as { cost_usd?: number } | undefined)?.cost_usd === 0.25)).toBe(true);
    expect(done.snapshot.usage?.costUsd).toBe(0.25);
  });

  test("a turn's token usage is added to the task's, and the broker's own budget guard sees it (onBudget stop)", async () => {
    const { broker } = makeBroker();
    const acp = acpCase();
    const steps = [
      { say: 'spent. ' },
      { usage: { cost: 3, tokens: { inputTokens: 1000, outputTokens: 200, totalTokens: 1200 } } },
      { sleep: 30_000 },
    ];
    const done = await runTask(broker, { ...acp.spec(script(steps), { settings: { onBudget: 'stop' } }), maxCostUsd: 1 });
    // No question: with onBudget stop the broker ends the task over its budget, keeping the last partial.
    expect(done.updates.some((u) => u.kind === 'ask')).toBe(false);
    expect(done.error?.reason).toBe('budget_exceeded');
    expect(done.snapshot.usage?.costUsd).toBe(3);
    expect((done.snapshot.lastPartial as { text?: string } | undefined)?.text).toBe('spent. ');
    const tokens = await runTask(
      broker,
      acp.spec(script([{ usage: { tokens: { inputTokens: 1000, outputTokens: 200, totalTokens: 1200 } } }])),
    );
    expect((tokens.payload!.meta as any).token_usage).toEqual({ input: 1000, output: 200 });
    expect(tokens.snapshot.usage).toMatchObject({ input: 1000, output: 200 });
  });
});
