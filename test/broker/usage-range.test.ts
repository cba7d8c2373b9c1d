/**
 * Y38 (docs/reliability.md): one usage report of 1e308 tokens (or $1e308) made the `stats` totals
 * Infinity for the hub's whole history. A figure that is not finite or out of range (model/usage.ts
 * USAGE_RANGE) is refused whole, and the refusal is recorded in the task's log and counters.
 */
import { describe, expect, test } from 'vitest';
import { readUsage, USAGE_RANGE } from '../../src/model/usage.js';
import { fixture, makeBroker, tempDir } from '../helpers/core.js';

describe('usage reports out of range', () => {
  for (const report of [{ token_usage: { input: 1e308, output: 0 } }, { cost_usd: 1e308 }, { usage: { total_tokens: 2e12 } }]) {
    test(`${JSON.stringify(report)} is refused and recorded; the task's usage and the stats stay finite`, async () => {
      const { broker } = makeBroker({ dataDir: tempDir() });
      await broker.ready;
      const task = broker.submit({ command: fixture('huge-usage.mjs'), input: { report } });
      await task.result;
      await task.finished;
      const snapshot = task.snapshot();
      expect(snapshot.usage).toEqual({ input: 70, output: 50, costUsd: 0.02 });
      expect(snapshot.counters.rejected).toBe(1);
      const refusal = broker.logOf(task.id).find((l) => l.event?.kind === 'problem' && l.event.problem === 'rejected');
      expect(refusal?.text).toMatch(/^rejected: usage report refused: meta\.\w+(\.\w+)? \S+ is out of range \(0 to \d+\)$/);
      const insights = broker.insights();
      expect(insights.total.tokensIn).toBe(70);
      expect(insights.total.tokensOut).toBe(50);
      expect(Number.isFinite(insights.total.tokensPerTask)).toBe(true);
    });
  }

  test('the edges: the range itself is accepted, one past it, negatives and a JSON 1e400 (Infinity) are refused', () => {
    expect(readUsage({ token_usage: { input: USAGE_RANGE.tokens, output: 0 } }).usage?.input).toBe(USAGE_RANGE.tokens);
    expect(readUsage({ token_usage: { input: 1e9, output: 0 } }).usage?.input).toBe(1e9);
    expect(readUsage({ token_usage: { input: USAGE_RANGE.tokens + 1 } }).refused).toContain('meta.token_usage.input');
    expect(readUsage({ token_usage: { output: -5 } }).refused).toBe('meta.token_usage.output -5 is out of range (0 to 1000000000000)');
    expect(readUsage(JSON.parse('{"cost_usd": 1e400}')).refused).toBe('meta.cost_usd Infinity is out of range (0 to 10000000)');
    expect(readUsage({ num_turns: 1e10 }).refused).toContain('meta.num_turns');
    expect(readUsage({}, { usage: { prompt_tokens: 3, completion_tokens: 4 } })).toEqual({ usage: { input: 3, output: 4 } });
  });
});
