/**
 * Real agents' usage updates that ACP v1's schema refuses: claude-agent-acp 0.23.1 sends the
 * session's cost in a `usage_update` whose `used` is null. The SDK would drop the whole update, cost
 * included; the adapter takes its figures (each checked) and the cost still reaches the task.
 */
import { describe, expect, test } from 'vitest';
import { makeBroker } from '../helpers/core.js';
import { runTask } from '../helpers/broker.js';
import { acpCase, script } from './acp-helpers.js';

describe('a usage update without a numeric `used`', () => {
  test('still brings its cost to the task, live and in the result', async () => {
    const { broker } = makeBroker();
    const acp = acpCase();
    const done = await runTask(broker, acp.spec(script([{ usage: { cost: 0.125, used: 'n/a' } }, { say: 'ok' }])));
    expect(done.error).toBeUndefined();
    expect((done.payload!.meta as Record<string, unknown>).cost_usd).toBe(0.125);
    expect(done.snapshot.usage?.costUsd).toBe(0.125);
    expect((done.payload!.meta as { acp: { ignored_updates: number } }).acp.ignored_updates).toBe(0);
  });
});
