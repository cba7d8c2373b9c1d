/**
 * A schedule's per-day cap, with an injected clock: the runs that started in the last 24 h are summed
 * (tokens = input + output, and the cost), older runs and skipped fires are not, a run whose task is
 * gone counts as nothing, and a cap is reached at equality.
 */
import { expect, test } from 'vitest';
import { BUDGET_DAY_MS, dayCapReached, daySpend, hasDayCap } from '../../src/schedules/budget.js';
import { parseSchedule, type FireRecord, type Schedule } from '../../src/schedules/schedule.js';
import type { TaskUsage } from '../../src/model/usage.js';

const NOW = Date.parse('2026-12-05T12:00:00Z');

function schedule(fields: Partial<Schedule>): Schedule {
  const parsed = parseSchedule({ name: 'job', command: ['true'], createdAt: 0, everyMs: 60_000, ...fields });
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.schedule;
}

const ran = (taskId: string, recordedAt: number): FireRecord => ({ schedule: 'job', at: recordedAt, outcome: 'ran', taskId, recordedAt });
const USAGE: Record<string, TaskUsage> = {
  old: { input: 1000, output: 1000, costUsd: 9 },
  a: { input: 30, output: 20, costUsd: 0.25 },
  b: { input: 100, output: 0 },
};
const usageOf = (id: string) => USAGE[id];

test('only runs that started within the last 24 h count, with their tokens and cost', () => {
  const records: FireRecord[] = [
    ran('old', NOW - BUDGET_DAY_MS), // exactly a day ago: out of the window
    ran('a', NOW - BUDGET_DAY_MS + 1),
    { schedule: 'job', at: NOW - 10, outcome: 'skipped', reason: 'overlap', recordedAt: NOW - 10 },
    ran('b', NOW - 5),
    ran('gone', NOW - 1), // no longer in history: counted as nothing
  ];
  expect(daySpend(records, usageOf, NOW)).toEqual({ tokens: 150, costUsd: 0.25, runs: 3 });
});

test('a cap is reached at equality, by tokens or by cost, and a schedule without caps has none', () => {
  expect(dayCapReached(schedule({ maxTokensPerDay: 150 }), { tokens: 149, costUsd: 0, runs: 1 })).toBeUndefined();
  expect(dayCapReached(schedule({ maxTokensPerDay: 150 }), { tokens: 150, costUsd: 0, runs: 1 })).toBe(
    '150 tokens in the last 24 h reached maxTokensPerDay 150',
  );
  expect(dayCapReached(schedule({ maxCostUsdPerDay: 0.5 }), { tokens: 1e9, costUsd: 0.5, runs: 2 })).toBe(
    '$0.5 in the last 24 h reached maxCostUsdPerDay $0.5',
  );
  expect(hasDayCap(schedule({}))).toBe(false);
  expect(hasDayCap(schedule({ maxCostUsdPerDay: 1 }))).toBe(true);
  expect(parseSchedule({ name: 'x', everyMs: 60_000, command: ['true'], createdAt: 0, maxTokensPerDay: 0 })).toEqual({
    ok: false,
    message: 'invalid schedule: Expected `maxTokensPerDay` to be a positive integer, got `0` (number)',
  });
});
