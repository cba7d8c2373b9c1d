import { describe, expect, test } from 'vitest';
import type { TaskError, TaskHandle } from '../../src/broker/index.js';
import { parseDoorBudgets, withDoorBudget } from '../../src/broker/guards/budget.js';
import { fixture, isAlive, leftovers, makeBroker, settle, waitFor, waitUntilGone } from '../helpers/core.js';

/** The pids the spender fixture reports in its first partial (itself and its grandchild). */
function pidsOf(task: TaskHandle): Promise<number[]> {
  return new Promise((resolve, reject) => {
    task.result.then(
      () => reject(new Error('task ended before reporting its pids')),
      (error: Error) => reject(new Error(`task ended before reporting its pids: ${error.message}`)),
    );
    const off = task.on('update', (u) => {
      const pids = (u.payload?.data as { pids?: number[] } | undefined)?.pids;
      if (u.kind === 'partial' && pids) {
        off();
        resolve(pids);
      }
    });
  });
}

describe('budgets', () => {
  test('an agent reporting 50 tokens per partial under maxTokens 120 ends budget_exceeded after its third report, tree gone', async () => {
    const { broker, ipcDir } = makeBroker();
    const task = broker.submit({ command: fixture('spender.mjs'), maxTokens: 120, retries: { max: 2, backoffMs: 10 } });
    const pids = await pidsOf(task);
    const error = ((await settle(task.result)) as { error: TaskError }).error;
    expect(error.reason).toBe('budget_exceeded');
    expect(error.message).toContain('used 150 tokens, over the budget of 120');
    const snapshot = task.snapshot();
    expect(snapshot.state).toBe('failed');
    expect(snapshot.usage).toMatchObject({ input: 90, output: 60 });
    expect(snapshot.budget).toEqual({ maxTokens: 120 });
    expect(snapshot.lastPartial).toEqual({ step: 'step 3' });
    // Never retried, although retries were allowed.
    expect(snapshot.attempt).toBe(1);
    await task.finished;
    await waitUntilGone(pids);
    expect(pids.filter(isAlive)).toEqual([]);
    expect(leftovers(ipcDir)).toEqual([]);
    expect(broker.logOf(task.id).some((l) => l.event?.kind === 'stopping' && l.event.reason === 'budget_exceeded')).toBe(true);
  });

  test('maxCostUsd stops the task at the first report over it', async () => {
    const { broker } = makeBroker();
    const task = broker.submit({ command: fixture('spender.mjs'), maxCostUsd: 0.025 });
    const error = ((await settle(task.result)) as { error: TaskError }).error;
    expect(error.reason).toBe('budget_exceeded');
    expect(error.message).toContain('spent $0.03, over the budget of $0.025');
    expect(task.snapshot().usage?.costUsd).toBeCloseTo(0.03);
    await task.finished;
  });

  test('without a budget the usage shows live as reports arrive and stays with the result', async () => {
    const { broker } = makeBroker();
    const task = broker.submit({ command: fixture('spender.mjs') });
    await waitFor(() => (task.snapshot().usage?.output ?? 0) >= 40, 'the second report', 30_000);
    const live = task.snapshot();
    expect(live.state).toBe('running');
    expect((live.usage?.input ?? 0) + (live.usage?.output ?? 0)).toBeGreaterThanOrEqual(100);
    await task.result;
    expect(task.snapshot().usage).toMatchObject({ input: 300, output: 200 });
    expect(broker.get(task.id)?.usage).toMatchObject({ input: 300, output: 200 });
    task.cancel();
    await task.finished;
  });
});

describe('budgets by door', () => {
  test('a task without a budget gets its door’s default, a door’s limit winning over `default`, its own over both', () => {
    const budgets = parseDoorBudgets({ default: { max_tokens: 1000, max_cost_usd: 2 }, mcp: { max_tokens: 100 } }, '/c.yaml');
    expect(withDoorBudget({ command: 'x', origin: 'mcp' }, budgets)).toMatchObject({ maxTokens: 100, maxCostUsd: 2 });
    expect(withDoorBudget({ command: 'x', origin: 'panel' }, budgets)).toMatchObject({ maxTokens: 1000, maxCostUsd: 2 });
    expect(withDoorBudget({ command: 'x', origin: 'mcp', maxTokens: 5 }, budgets)).toMatchObject({ maxTokens: 5, maxCostUsd: 2 });
  });

  test('a wrong budget section is refused with the field named', () => {
    expect(() => parseDoorBudgets({ mcp: { max_tokens: -1 } }, '/c.yaml')).toThrow(
      '/c.yaml: budget.mcp.max_tokens must be a positive integer, got -1',
    );
    expect(() => parseDoorBudgets({ robots: {} }, '/c.yaml')).toThrow('has no key "robots"');
  });

  test('the broker enforces the default budget on a task that sets none', async () => {
    const { broker } = makeBroker({ budgets: { default: { maxTokens: 120 } } });
    const task = broker.submit({ command: fixture('spender.mjs') });
    const error = ((await settle(task.result)) as { error: TaskError }).error;
    expect(error.reason).toBe('budget_exceeded');
    expect(task.snapshot().budget).toEqual({ maxTokens: 120 });
    await task.finished;
  });
});

describe('budgets with the SDK', () => {
  test('an SDK agent reports usage in its progress meta; over budget it is cancelled and confirms', async () => {
    const { broker, ipcDir } = makeBroker();
    const task = broker.submit({ command: fixture('sdk-spender.mjs'), maxTokens: 120 });
    const error = ((await settle(task.result)) as { error: TaskError }).error;
    expect(error.reason).toBe('budget_exceeded');
    expect(task.snapshot().usage).toMatchObject({ input: 90, output: 60 });
    await task.finished;
    expect(broker.logOf(task.id).some((l) => l.event?.kind === 'cancel-confirmed')).toBe(true);
    expect(leftovers(ipcDir)).toEqual([]);
  });
});
