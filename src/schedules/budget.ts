/**
 * A schedule's spending cap over a rolling day (`maxTokensPerDay`, `maxCostUsdPerDay`): the usage its
 * runs recorded (as their tasks report it, ../model/usage.ts) summed over the runs that started in
 * the last 24 h, `run-now` included, a run still going counted with what it has reported so far.
 * Once the sum reached a cap, the schedule's fires are skipped `budget_spent` until runs age out of
 * the day. A run whose task is no longer known (history retention) counts as nothing. Pure: the
 * clock and the usage are given.
 */
import type { TaskUsage } from '../model/usage.js';
import type { FireRecord, Schedule } from './schedule.js';

/** The rolling window of the per-day caps. */
export const BUDGET_DAY_MS = 24 * 3600_000;

export interface DaySpend {
  /** Input + output tokens. */
  readonly tokens: number;
  readonly costUsd: number;
  /** Runs counted. */
  readonly runs: number;
}

/** What the runs among `records` that started in the day before `now` spent. */
export function daySpend(records: readonly FireRecord[], usageOf: (taskId: string) => TaskUsage | undefined, now: number): DaySpend {
  const since = now - BUDGET_DAY_MS;
  let tokens = 0;
  let costUsd = 0;
  let runs = 0;
  for (const record of records) {
    if (record.outcome !== 'ran' || record.taskId === undefined || record.recordedAt <= since) continue;
    const usage = usageOf(record.taskId);
    runs += 1;
    tokens += (usage?.input ?? 0) + (usage?.output ?? 0);
    costUsd += usage?.costUsd ?? 0;
  }
  return { tokens, costUsd, runs };
}

/** Whether the schedule has a per-day cap at all (only then is its spend looked up). */
export function hasDayCap(schedule: Schedule): boolean {
  return schedule.maxTokensPerDay !== undefined || schedule.maxCostUsdPerDay !== undefined;
}

/** The cap `spend` reached, in words (for the log), or undefined while it is under every cap. */
export function dayCapReached(schedule: Schedule, spend: DaySpend): string | undefined {
  const { maxTokensPerDay, maxCostUsdPerDay } = schedule;
  if (maxTokensPerDay !== undefined && spend.tokens >= maxTokensPerDay)
    return `${spend.tokens} tokens in the last 24 h reached maxTokensPerDay ${maxTokensPerDay}`;
  if (maxCostUsdPerDay !== undefined && spend.costUsd >= maxCostUsdPerDay)
    return `$${spend.costUsd} in the last 24 h reached maxCostUsdPerDay $${maxCostUsdPerDay}`;
  return undefined;
}
